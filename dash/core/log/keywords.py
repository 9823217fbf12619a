"""Which of a block's other lines may be records: those holding one of the parser's keywords.

The parser's own prefilter is derived from the grammar (a line without one of its keywords is
no record), so the bulk reader looks for the keywords in the text its shapes left and hands
only the lines that hold one to the parser. Whether a keyword is there at all is mostly
settled by looking for one of its bytes that the text lacks (`bytes.find` of one byte runs at
memory speed); a keyword none of whose bytes is missing is searched for in full.
"""

from __future__ import annotations

import re

from dash.core.log.parser import LineParser
from dash.core.log.syntax import keyword_pattern


def literal_keywords(parser: LineParser) -> tuple[bytes, ...] | None:
    """What the parser's prefilter looks for, as byte strings, when the prefilter is what the
    parser runs (`keyword_pattern` of `interest_words`: a plain, case-sensitive search for any
    of them, their outer spaces left out); None otherwise, and every other line is parsed."""
    interest = parser.interest
    words = getattr(parser, "interest_words", parser.keywords)
    if interest.pattern != keyword_pattern(words) or interest.flags != re.UNICODE:
        return None
    texts = [w.strip() for w in words if w.strip()]
    try:
        coded = tuple(t.encode("utf-8") for t in texts)
    except UnicodeEncodeError:
        return None
    if not coded or any(b"\n" in w or "\ufffd" in t for w, t in zip(coded, texts, strict=True)):
        return None
    return coded


class Keywords:
    """Where in a text the parser's keywords are: a keyword one of whose bytes the text lacks
    is not there (`bytes.find` of one byte runs at memory speed); the others are searched for
    together, with one pattern of them all."""

    def __init__(self, words: tuple[bytes, ...]) -> None:
        self.words = words
        # per keyword its distinct bytes, the one that was missing last time first; keywords
        # grouped by that byte, so that one search rules out every keyword of a group
        self.probes = [list(dict.fromkeys(w)) for w in words]
        self._groups: dict[int, list[int]] | None = None
        self._patterns: dict[tuple[bytes, ...], re.Pattern[bytes]] = {}

    def _unruled(self, text: bytes) -> tuple[bytes, ...]:
        """The keywords whose every byte is in `text`."""
        if self._groups is None:
            self._groups = {}
            for i, probes in enumerate(self.probes):
                self._groups.setdefault(probes[0], []).append(i)
        missing: dict[int, bool] = {}
        out, moved = [], False
        for first, group in self._groups.items():
            if text.find(first) < 0:
                continue  # every keyword of the group lacks it
            missing[first] = False
            for i in group:
                probes = self.probes[i]
                for k in range(1, len(probes)):
                    byte = probes[k]
                    gone = missing.get(byte)
                    if gone is None:
                        gone = missing[byte] = text.find(byte) < 0
                    if gone:
                        probes.insert(0, probes.pop(k))
                        moved = True
                        break
                else:
                    out.append(i)
        if moved:
            self._groups = None
        return tuple(self.words[i] for i in sorted(out))

    def lines(self, text: bytes, interest: re.Pattern[bytes]) -> list[int]:
        """Offsets of the lines of `text` that hold a keyword, in order (`interest`: the
        parser's prefilter); every line of `text` follows a newline and ends with one.

        A keyword whose bytes are all there is looked for where one of its bytes is rare in
        the text (the few lines that hold it are tried with the prefilter: an odd line among
        access lines), else with one pattern of all such keywords over the text."""
        words = self._unruled(text)
        if not words:
            return []
        found: dict[int, list[int] | None] = {}
        tried: set[int] = set()
        hard = []
        for word in words:
            for byte in dict.fromkeys(word):
                at = found.get(byte, ...)
                if at is ...:
                    at = found[byte] = _few(text, byte)
                if at is not None:
                    tried.update(text.rfind(b"\n", 0, a) + 1 for a in at)
                    break
            else:
                hard.append(word)
        starts = {a for a in tried if interest.search(text, a, text.find(b"\n", a))}
        if hard:
            starts.update(self._search(text, tuple(hard)))
        return sorted(starts)

    def _search(self, text: bytes, words: tuple[bytes, ...]) -> list[int]:
        pattern = self._patterns.get(words)
        if pattern is None:
            if len(self._patterns) > 64:
                self._patterns.clear()
            pattern = self._patterns[words] = re.compile(
                keyword_pattern(tuple(w.decode("utf-8") for w in words)).encode("utf-8"))
        starts, at = [], 0
        while (m := pattern.search(text, at)) is not None:
            starts.append(text.rfind(b"\n", 0, m.start()) + 1)
            stop = text.find(b"\n", m.end())
            if stop < 0:
                break
            at = stop
        return starts


def _few(text: bytes, byte: int, most: int = 32) -> list[int] | None:
    """Where `byte` is in `text`, if it is there at most `most` times."""
    out: list[int] = []
    at = text.find(byte)
    while at >= 0:
        if len(out) == most:
            return None
        out.append(at)
        at = text.find(byte, at + 1)
    return out


def all_lines(text: bytes) -> list[int]:
    """Offsets of every non-empty line of `text` (when the prefilter is no plain search)."""
    out, at = [], text.find(b"\n")
    while 0 <= at < len(text) - 1:
        if text[at + 1] != 10:
            out.append(at + 1)
        at = text.find(b"\n", at + 1)
    return out
