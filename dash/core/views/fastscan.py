"""A summary `Part` straight from a block of log bytes, at C speed, for the dominant line shapes.

A busy server's log is mostly uvicorn access lines, `Prefill batch` and `Decode batch` lines in
one shape: `[YYYY-MM-DD HH:MM:SS] Decode batch, #running-req: N, #token: N, ..., gen throughput
(token/s): G, ...`. One compiled pattern, tried at every line start, skips the access lines,
takes only the numbers the summary needs from decode and prefill lines that match it strictly,
and hands back every other line whole, each with its position; those few go through
`parse_line`, as do the handful of decode lines that matter one by one (the block's peak, its
last, one per 10 s for the alerts). Line numbers come from counting newlines up to those
positions, once through the block.

The strict shapes are chosen so that `parse_line` would give the same numbers: the stamp and
head are fixed text, the fields read are the first items after the head (the parser keeps the
first of a repeated key), the number formats are plain digits. What could still change the
parser's reading of such a line is refused for the whole block, which then takes the record-by-
record path: a stamp that is not all digits, a carriage return, colour codes (`ESC`, `^[`), or
`Decode batch` after a prefill head; so is a block where some other line is a decode record
(vLLM, the 2024 form), since the order of throughput samples must be kept. These are checked on
the strict lines alone, all at once, after the pattern has run: the pattern itself reads a
stamp as any 19 characters, which `re` checks in one step instead of twenty.

Where the C helper `_linescan` was built, it takes the first step: it counts the block's lines,
sums the strict prefill lines (in exactly the shape the pattern reads, rank tags or none) and
hands back the rest that are not access lines, with their line numbers, for the pattern to run
over. Without it, the pattern runs over the whole block and newlines are counted here; both
give the same `Part`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain, compress, count, islice
from operator import itemgetter, ne

from dash.core.log.parse import MAX_LINE_CHARS, Record, parse_line
from dash.core.views.summary import STAMP_BYTES, Part, Stamps, fold_other, norm_ts
from dash.core.views.summary_feed import Candidate

MAX_LINE_BYTES = MAX_LINE_CHARS * 4
# `.{19}` rather than the stamp's digits: `re` checks a run of "any" in one step but a digit
# class byte by byte, on every line. The stamps of the lines kept are checked afterwards, all
# at once (`_stamps_ok`); access lines in this shape are never parsed (see report._CANDIDATE).
_TAG = rb"(?:DP|TP|EP|PP|ATTN_CP|MOE_DP)\d{1,4}"
_PREFIX = rb"\[(.{19})(?:\] | " + _TAG + rb"(?: " + _TAG + rb")*\] )"  # untagged tried first
# The first `gen throughput` item is the one the parser keeps: no item before it may start so.
# A number must end its item (`, ` or the line's end follows).
_PREFILL = rb"Prefill batch[.,] #new-seq: \d+, #new-token: (\d+), #cached-token: (\d+)(?=, |\n)"
_DECODE = (rb"Decode batch[.,] #running-req: \d+, #token: \d+, "
           rb"(?:(?!gen )[^,\n]{0,200}, ){0,30}gen throughput \(token/s\): (\d+\.\d+)(?=, |\n)")
# Tried at every line start: a uvicorn access line fails at once. Groups: a strict line whole,
# its stamp, prefill new and cached, decode gen; or any other line whole.
_ROW = re.compile(rb"\n(?!\[.{19}\] INFO:     \d)(?:(" + _PREFIX + rb"(?:" + _PREFILL + rb"|"
                  + _DECODE + rb").*)|(.+))")
# what report.Scan never parses: uvicorn access lines after an optional `[..] ` / `(..) `
_ACCESS = re.compile(rb"(?:\[[^\]\n]{0,80}\] |\([^)\n]{0,80}\) |\[.{19}\] )?INFO:     \d")
_DECODE_HEAD = b"Decode batch"
_STAMP_SHAPE = b"0000-00-00 00:00:00"
_EXACT = float(2 ** 53)
_DIGITS_TO_0 = bytes.maketrans(b"123456789", b"000000000")
Buffer = bytes | bytearray
LINESCAN_ABI = 2  # the `_linescan.scan` this module reads (LINESCAN_ABI in _linescan.c)
try:  # built from _linescan.c when a C compiler was at hand (hatch_build.py); else `re` does it
    from dash.core import _linescan as scanner
except ImportError:
    scanner = None
if getattr(scanner, "ABI", None) != LINESCAN_ABI:
    scanner = None  # left over from an older build: reinstall to rebuild it
_groups = re.Match.groups
# columns of `_ROW`'s groups (itemgetter passes over the rows beat `zip(*rows)` by a third)
_COLUMNS = tuple(map(itemgetter, (0, 1, 4, 5)))  # strict line, its stamp, gen, other line
_NEW, _CACHED = itemgetter(2), itemgetter(3)


def newlines(s: Buffer, start: int, end: int) -> int:
    """How many newlines `s[start:end]` holds. Deleting them and comparing lengths takes half
    the time of `bytes.count`, whose byte-at-a-time loop is CPython's slowest scan of a block
    (`replace` jumps from one to the next with `memchr`)."""
    return end - start - len(s[start:end].replace(b"\n", b""))


def _sum_digits(numbers: list[bytes]) -> int:
    """The sum of unsigned decimal numbers. `float()` reads bytes twice as fast as `int()`, and
    a float sum of whole numbers is exact while it stays below 2**53 (every partial sum is
    smaller still); past that, the numbers are added again as ints."""
    total = sum(map(float, numbers))
    return int(total) if total < _EXACT else sum(map(int, numbers))


def _stamps_ok(stamps: Iterable[bytes]) -> bool:
    """Every stamp (19 bytes each) is `YYYY-MM-DD HH:MM:SS` in digits (one translate for all)."""
    text = b"".join(stamps)
    return text.translate(_DIGITS_TO_0) == _STAMP_SHAPE * (len(text) // STAMP_BYTES)


def _strict_lines_ok(lines: Iterable[bytes], decodes: int) -> bool:
    """No byte in the strict lines that makes the parser rewrite a line (carriage return,
    colour codes), and no `Decode batch` but the heads of the decode lines among them."""
    text = b"\n".join(lines)
    return (text.find(b"\r") < 0 and text.find(b"\x1b") < 0
            and (text.find(b"^") < 0 or text.find(b"^[") < 0)
            and text.count(_DECODE_HEAD) == decodes)


_key = itemgetter(slice(1, 19))  # `YYYY-MM-DD HH:MM:S`: the 10-second bucket of a strict line


def _norm_key(head: bytes) -> str:
    return head[1:19].decode("ascii").replace(" ", "T", 1)


def _decode_roles(heads: list[bytes], gens: list[float]) -> dict[int, str]:
    """Decode lines read one by one, by index: the first of each 10 s ("cand"), the block's
    first maximum ("peak") and its last ("last"); roles combine."""
    keys = list(map(_key, heads))
    changed = map(ne, keys, islice(keys, 1, None))
    roles = dict.fromkeys(chain((0,), compress(count(1), changed)), "cand")
    peak = gens.index(max(gens))
    roles[peak] = roles.get(peak, "") + "peak"
    last = len(heads) - 1
    roles[last] = roles.get(last, "") + "last"
    return roles


def scan_block(s: Buffer, end: int, first_line: int) -> Part | None:
    """The `Part` of the whole lines `s[1:end]` (`s[0]` is a newline; `first_line` is the
    first one's number), or None when they must be read record by record."""
    if scanner is not None:
        # The C helper counts the lines, sums the strict prefill lines and sets aside the rest
        # that are not access lines: the pattern then runs over those alone, one row each.
        total, kept, numbers, prefill = scanner.scan(s, 0, end, first_line)
        matches = list(_ROW.finditer(kept))
        line_of = memoryview(numbers).cast("q")
        if len(matches) == len(line_of):
            return _part(matches, _Numbered(line_of, total), prefill)
        # cannot happen (a kept line is never empty nor an access line); do without the helper
    matches = list(_ROW.finditer(s, 0, end))
    return _part(matches, _Lines(s, end, first_line, matches))


Prefill = tuple[int, int, int, int, bytes, int, bytes]
"""Strict prefill lines the C helper summed: count, new and cached tokens, first line and its
stamp, last line and its stamp (`_linescan.c`)."""


def _add_prefill(part: Part, prefill: Prefill, first: int | None, last: int | None) -> None:
    """Fold in the C helper's prefill lines; `first`/`last`: the line numbers of the rows that
    gave the part its first and last stamps."""
    lines, new, cached, first_line, first_stamp, last_line, last_stamp = prefill
    part.new += new
    part.cached += cached
    part.kinds["prefill"] += lines
    part.engines["sglang"] += lines
    if first is None or first_line < first:
        part.first_ts = norm_ts(first_stamp)
    if last is None or last_line > last:
        part.last_ts = norm_ts(last_stamp)


def _part(matches: list[re.Match[bytes]], lines: _Lines | _Numbered,
          prefill: Prefill | None = None) -> Part | None:
    if not matches:
        part = Part(lines=lines.total())
        if prefill is not None:
            _add_prefill(part, prefill, None, None)
        return part
    rows = list(map(_groups, matches))
    line_col, stamp_col, gen_col, other_col = (list(map(column, rows)) for column in _COLUMNS)
    heads = list(compress(line_col, gen_col))  # the strict decode lines, whole
    if not _stamps_ok(filter(None, stamp_col)):
        return None
    if not _strict_lines_ok(filter(None, line_col), len(heads)):
        return None
    part = Part()
    news = list(filter(None, map(_NEW, rows)))
    part.new = _sum_digits(news)
    part.cached = _sum_digits(list(filter(None, map(_CACHED, rows))))
    if heads or news:
        part.kinds.update(decode=len(heads), prefill=len(news))
        part.engines["sglang"] = len(heads) + len(news)
    part.gens = list(map(float, filter(None, gen_col)))
    part.gen_ts = Stamps(b"".join(compress(stamp_col, gen_col)))
    n = len(matches)
    items: list[tuple[int, int]] = [(r, -1) for r in compress(range(n), other_col)]
    roles: dict[int, str] = {}
    if heads:
        roles = _decode_roles(heads, part.gens)
        head_rows = list(compress(range(n), gen_col))
        items += [(head_rows[j], j) for j in roles]
        items.sort()
    other_ts = _walk(part, lines, other_col, items, heads, roles)
    if other_ts is None:
        return None
    first, last = _first_last_ts(part, stamp_col, other_ts)
    if prefill is not None:
        _add_prefill(part, prefill, None if first is None else lines.row(first),
                     None if last is None else lines.row(last))
    return part


class _Lines:
    """Line numbers of rows, counting newlines forward once through the block."""

    def __init__(self, s: Buffer, end: int, first_line: int,
                 matches: list[re.Match[bytes]]) -> None:
        self.s = s
        self.end = end
        self.first_line = first_line
        self.matches = matches
        self.line = first_line  # the number of the line after the newline at `cur`
        self.cur = 0

    def _at(self, nl: int) -> int:
        """The number of the line after the newline at `nl` (at or after the last asked)."""
        self.line += newlines(self.s, self.cur, nl)
        self.cur = nl
        return self.line

    def row(self, r: int) -> int:
        """The line number of row `r` (rows asked in order)."""
        return self._at(self.matches[r].start())

    def total(self) -> int:
        """How many lines the block has (`end - 1` is the last one's newline)."""
        return self._at(self.end - 1) - self.first_line


class _Numbered:
    """Line numbers of rows as the C helper gave them."""

    def __init__(self, numbers: memoryview, total: int) -> None:
        self.numbers = numbers
        self._total = total

    def row(self, r: int) -> int:
        return int(self.numbers[r])

    def total(self) -> int:
        return self._total


def _walk(part: Part, lines: _Lines | _Numbered,
          others: list[bytes], items: list[tuple[int, int]], heads: list[bytes],
          roles: dict[int, str]) -> dict[int, str] | None:
    """Parse the lines that matter one by one, in file order: the stamps of the other rows'
    records, or None to refuse the block."""
    other_ts: dict[int, str] = {}
    for row, j in items:
        line = lines.row(row)
        if j < 0:
            text = others[row][:MAX_LINE_BYTES]
            if _ACCESS.match(text):
                continue
            rec = parse_line(text.decode("utf-8", "replace"), line)
            if rec is None:
                continue
            if not _other(part, rec):
                return None
            if rec.get("ts"):
                other_ts[row] = rec["ts"]
            continue
        _decode_role(part, roles[j], j, line, heads[j][:MAX_LINE_BYTES])
    part.lines = lines.total()
    if heads:
        part.first_key = _norm_key(heads[0])
        part.last_key = _norm_key(heads[-1])
    return other_ts


def _decode_role(part: Part, role: str, j: int, line: int, text: bytes) -> None:
    if "cand" in role:
        part.candidates.append(Candidate(line, _norm_key(text), text))
    if "peak" in role:
        part.peak = (j, line)
    if "last" in role:
        part.last_decode = parse_line(text.decode("utf-8", "replace"), line)


def _other(part: Part, rec: Record) -> bool:
    """Fold one fully parsed record into the part; False for a decode record (refuse)."""
    kind = rec["kind"]
    if kind == "decode":
        return False
    part.kinds[kind] += 1
    part.engines[rec.get("engine") or "sglang"] += 1
    fold_other(part, rec)
    return True


def _first_last_ts(part: Part, stamps: list[bytes],
                   other_ts: dict[int, str]) -> tuple[int | None, int | None]:
    """Set the first and last stamp of the block's records, in row order (`stamps` of the
    strict rows, `other_ts` of the other rows that are records); the rows they come from."""

    def ts_of(r: int) -> str | None:
        return norm_ts(stamps[r]) if stamps[r] else other_ts.get(r)

    n = len(stamps)
    first = next((r for r in range(n) if ts_of(r)), None)
    last = next((r for r in range(n - 1, -1, -1) if ts_of(r)), None)
    part.first_ts = None if first is None else ts_of(first)
    part.last_ts = None if last is None else ts_of(last)
    return first, last
