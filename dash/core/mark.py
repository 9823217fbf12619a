"""What vouches for the bytes already read of a file: its first bytes and the ones before the offset.

A file truncated and rewritten between two looks keeps its inode, and when the rewrite is as long
as what was read, or longer, its size never drops below the offset either. Only the bytes tell:
a `Mark` remembers the file's first `HEAD_BYTES` and the `WINDOW_BYTES` just before the offset,
and the I/O side reads the same two ranges back at each look (two small reads, whatever the file's
size). A restarted server's log differs from the old one in its startup lines and in the
timestamps and figures of the lines before the offset (every decode line ends in the same bytes,
so the window must span many lines: 4 KB is some twenty of them).

Timestamps are not used: `ctime` and `mtime` move in kernel ticks, so a rewrite within the same
tick as the last read looks unchanged, and `touch` or `chmod` change them without changing a byte.
A rewrite that keeps both ranges byte for byte and changes only what lies between them goes
unseen; for logs and JSONL outputs that means the same lines up to the offset, where nothing read
is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

HEAD_BYTES = 4096
"""The file's first bytes that are remembered (its first lines: a server's startup banner)."""
WINDOW_BYTES = 4096
"""Bytes just before the offset that are remembered: many lines, not one line's common tail."""

Span = tuple[int, int]
"""(offset, length) of a byte range to read back."""


@dataclass(slots=True)
class Mark:
    """The remembered bytes of one file: `head` is [0, len(head)), `tail` ends at `end`."""

    end: int = 0
    head: bytes = b""
    tail: bytes = b""

    @classmethod
    def spans_at(cls, end: int) -> tuple[Span, Span]:
        """The two ranges a mark at `end` holds: read them to build it (`Mark(end, *bytes)`)."""
        window = min(WINDOW_BYTES, end)
        return (0, min(HEAD_BYTES, end)), (end - window, window)

    def spans(self) -> tuple[Span, Span]:
        """The ranges to read back for `holds`."""
        return (0, len(self.head)), (self.end - len(self.tail), len(self.tail))

    def holds(self, head: bytes, tail: bytes) -> bool:
        """Whether the bytes read back from `spans` are still the ones remembered."""
        return head == self.head and tail == self.tail

    def advance(self, data: bytes) -> None:
        """`data` was read at `end`: the mark moves past it."""
        if len(self.head) == self.end < HEAD_BYTES:  # the head is still being read from 0
            self.head += data[:HEAD_BYTES - self.end]
        if len(data) >= WINDOW_BYTES:
            self.tail = data[-WINDOW_BYTES:]
        else:
            self.tail = (self.tail + data)[-WINDOW_BYTES:]
        self.end += len(data)
