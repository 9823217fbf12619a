"""A block's stamps as one text: what a summary part carries of its decode rows' times.

A busy log's decode rows have a stamp each, and the summary reads few of them (a bucket's
first for the chart, the peak's, the last few before a rank's first line): kept as one text
of stamps of one width, each is cut out when it is read, where a list held a string a row
(made, pickled by the reading process and unpickled by the one that merges).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import overload

_less_last = itemgetter(slice(0, -1))


class StampColumn(Sequence[str]):
    """Normalised stamps of one width `width`, joined by newlines (ASCII)."""

    __slots__ = ("_text", "_width", "_n")

    def __init__(self, text: bytes, width: int) -> None:
        self._text = text
        self._width = width
        self._n = (len(text) + 1) // (width + 1) if text else 0

    @classmethod
    def of(cls, normalised: bytes, n: int) -> StampColumn | None:
        """The column of `n` plain stamps normalised and joined by newlines
        (`timestamps.normalised_joined`), where all are of one width and end in their seconds
        (no fraction); else None."""
        if not n or b"." in normalised:
            return None
        width = (len(normalised) + 1) // n - 1
        if width < 3 or (width + 1) * n - 1 != len(normalised):
            return None
        if normalised[width::width + 1].strip(b"\n") or normalised[width - 3::width + 1].strip(b":"):
            return None  # not one width after all (the newlines elsewhere), or not `...:SS`
        return cls(normalised, width)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        at = i * (self._width + 1)
        return self._text[at:at + self._width].decode("ascii")

    def __iter__(self) -> Iterator[str]:
        return iter(self._text.decode("ascii").split("\n") if self._n else ())

    def bucket_keys(self) -> list[bytes]:
        """Each stamp's 10-second key (`ts_key`: the stamp less its last digit), as bytes."""
        return list(map(_less_last, self._text.split(b"\n")))

    def __reduce__(self) -> tuple[type[StampColumn], tuple[bytes, int]]:
        return StampColumn, (self._text, self._width)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StampColumn):
            return (self._text, self._width) == (other._text, other._width)
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

