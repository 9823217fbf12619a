"""A summary `Part` straight from a block of log bytes, at C speed, for the dominant line shapes.

A busy server's log is mostly uvicorn access lines, `Prefill batch` and `Decode batch` lines in
one shape: `[YYYY-MM-DD HH:MM:SS] Decode batch, #running-req: N, #token: N, ..., gen throughput
(token/s): G, ...`. One compiled pattern, tried at every line start, skips the access lines,
takes only the numbers the summary needs from decode and prefill lines that match it strictly,
and hands back every other line whole; those few go through `parse_line`, as do the handful of
decode lines that matter one by one (the block's peak, its last, one per 10 s for the alerts).

The strict shapes are chosen so that `parse_line` would give the same numbers: the stamp and
head are fixed text, the fields read are the first items after the head (the parser keeps the
first of a repeated key), the number formats are plain digits. What could still change the
parser's reading of such a line is refused for the whole block, which then takes the record-by-
record path: a carriage return, colour codes (`ESC`, `^[`), or `Decode batch` after a prefill
head; so is a block where some other line is a decode record (vLLM, the 2024 form), since
the order of throughput samples must be kept.
"""

from __future__ import annotations

import re
from itertools import compress

from dash.core.parse import MAX_LINE_CHARS, Record, parse_line
from dash.core.parse_summary import Part, fold_other, norm_ts
from dash.core.summary_alerts import Candidate

MAX_LINE_BYTES = MAX_LINE_CHARS * 4
_TS = rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
# The first `gen throughput` item is the one the parser keeps: no item before it may start so.
# A number must end its item (`, ` or the line's end follows).
_TAGS = rb"(?: (?:DP|TP|EP|PP|ATTN_CP|MOE_DP)\d{1,4})*"  # rank tags after the stamp
_PREFILL = (rb"\[(" + _TS + rb")" + _TAGS + rb"\] Prefill batch[.,] #new-seq: \d+, #new-token: (\d+), "
            rb"#cached-token: (\d+)(?=, |\n)")
_DECODE = (rb"(\[" + _TS + _TAGS + rb"\] Decode batch[.,] #running-req: \d+, #token: \d+, "
           rb"(?:(?!gen )[^,\n]{0,200}, ){0,30}gen throughput \(token/s\): (\d+\.\d+))(?=, |\n)")
# Tried at every line start: a uvicorn access line in the strict shape fails at once; groups:
# prefill ts, new, cached, decode line head (up to its gen value), gen, any other whole line.
_ROW = re.compile(rb"\n(?!\[" + _TS + rb"\] INFO:     \d)(?:" + _PREFILL + rb"|" + _DECODE
                  + rb"|([^\n]+))")
_OTHER = 5
# what report.Scan never parses: uvicorn access lines after an optional `[..] ` / `(..) `
_ACCESS = re.compile(rb"(?:\[[^\]\n]{0,80}\] |\([^)\n]{0,80}\) )?INFO:     \d")
_DECODE_HEAD = b"Decode batch"
_PROBE = 64
Buffer = bytes | bytearray


def _refused(s: Buffer, end: int) -> bool:
    """A byte that makes the parser rewrite a line: carriage return, colour codes."""
    return (s.find(b"\r", 0, end) >= 0 or s.find(b"\x1b", 0, end) >= 0
            or (s.find(b"^", 0, end) >= 0 and s.find(b"^[", 0, end) >= 0))


def _key(head: bytes) -> bytes:
    return head[1:19]  # `YYYY-MM-DD HH:MM:S`: the 10-second bucket of a strict line


def _norm_key(head: bytes) -> str:
    return head[1:19].decode("ascii").replace(" ", "T", 1)


class _Locator:
    """Line numbers of lines found by content, walking forward once through the block."""

    def __init__(self, s: Buffer, end: int, first_line: int) -> None:
        self.s = s
        self.end = end
        self.first_line = first_line
        self.cur = 0
        self.nl = 0  # newlines in s[:cur]

    def find(self, head: bytes, skip: int = 0, whole: bool = True) -> tuple[int, bytes] | None:
        """(line number, text) of the next line equal to `head` (`whole`), or else starting
        with `head` followed by `, ` or its end, after `skip` earlier such lines."""
        s = self.s
        needle = b"\n" + head + (b"\n" if whole else b"")
        probe = needle[:_PROBE]  # a short needle is searched faster; the rest is compared
        p, after = self.cur - 1, len(needle)
        while True:
            p = s.find(probe, p + 1, self.end)
            if p < 0:
                return None  # cannot happen for a row of this block; refuse rather than guess
            if after > _PROBE and s[p:p + after] != needle:
                continue
            if not whole and s[p + after:p + after + 1] not in (b",", b"\n"):
                continue  # a longer line that only starts the same
            if skip == 0:
                break
            skip -= 1
        self.nl += s.count(b"\n", self.cur, p)
        line = self.first_line + self.nl
        self.cur, self.nl = p + 1, self.nl + 1  # past this line's leading newline
        stop = s.find(b"\n", p + 1, self.end)
        return line, bytes(s[p + 1:min(stop, p + 1 + MAX_LINE_BYTES)])

    def total(self) -> int:
        return self.nl + self.s.count(b"\n", self.cur, self.end) - 1


def _decode_roles(heads: list[bytes], gens: list[float]) -> dict[int, str]:
    """Decode lines read one by one, by index: the first of each 10 s ("cand"), the block's
    first maximum ("peak") and its last ("last"); roles combine."""
    roles: dict[int, str] = {0: "cand"}
    keys = list(map(_key, heads))
    for i in range(1, len(keys)):
        if keys[i] != keys[i - 1]:
            roles[i] = "cand"
    peak = gens.index(max(gens))
    roles[peak] = roles.get(peak, "") + "peak"
    last = len(heads) - 1
    roles[last] = roles.get(last, "") + "last"
    return roles


def scan_block(s: Buffer, end: int, first_line: int) -> Part | None:
    """The `Part` of the whole lines `s[1:end]` (`s[0]` is a newline; `first_line` is the
    first one's number), or None when they must be read record by record."""
    if _refused(s, end):
        return None
    rows = _ROW.findall(s, 0, end)
    if not rows:
        return Part(lines=s.count(b"\n", 0, end) - 1)
    pre_ts, new_col, cached_col, head_col, gen_col, other_col = zip(*rows, strict=True)
    others = list(filter(None, other_col))
    heads = list(filter(None, head_col))
    inside = sum(o.count(_DECODE_HEAD) for o in others)
    if s.count(_DECODE_HEAD, 0, end) != len(heads) + inside:
        return None  # `Decode batch` in the tail of a strict line: the parser reads it so
    part = Part()
    news = list(filter(None, new_col))
    part.new = sum(map(int, news))
    part.cached = sum(map(int, filter(None, cached_col)))
    if heads or news:
        part.kinds.update(decode=len(heads), prefill=len(news))
        part.engines["sglang"] = len(heads) + len(news)
    part.gens = list(map(float, filter(None, gen_col)))
    part.gen_ts = [h[1:20] for h in heads]
    n = len(rows)
    items: list[tuple[int, int]] = [(r, -1) for r in compress(range(n), other_col)]
    roles: dict[int, str] = {}
    head_rows: list[int] = []
    if heads:
        roles = _decode_roles(heads, part.gens)
        head_rows = list(compress(range(n), head_col))
        items += [(head_rows[j], j) for j in roles]
        items.sort()
    other_ts = _walk(part, _Locator(s, end, first_line), rows, items, heads, head_rows, roles)
    if other_ts is None:
        return None
    _first_last_ts(part, rows, other_ts)
    return part


def _walk(part: Part, loc: _Locator, rows: list[tuple[bytes, ...]], items: list[tuple[int, int]],
          heads: list[bytes], head_rows: list[int],
          roles: dict[int, str]) -> dict[int, str] | None:
    """Locate and parse the lines that matter one by one, in file order: the stamps of the
    other rows' records, or None to refuse the block."""
    other_ts: dict[int, str] = {}
    prev_dec, last_row = -1, -1
    for row, j in items:
        prev_row, last_row = last_row, row
        if j < 0:
            found = loc.find(rows[row][_OTHER])
            if found is None:
                return None
            line, text = found
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
        head = heads[j]
        skip = 0
        if head in heads[prev_dec + 1:j]:  # same-looking lines not located yet: step over
            skip = sum(1 for m in range(prev_dec + 1, j)
                       if heads[m] == head and head_rows[m] > prev_row)
        found = loc.find(head, skip, whole=False)
        if found is None:
            return None
        line, text = found
        prev_dec = j
        _decode_role(part, roles[j], j, line, head, text)
    part.lines = loc.total()
    if heads:
        part.first_key = _norm_key(heads[0])
        part.last_key = _norm_key(heads[-1])
    return other_ts


def _decode_role(part: Part, role: str, j: int, line: int, head: bytes, text: bytes) -> None:
    if "cand" in role:
        part.candidates.append(Candidate(line, _norm_key(head), text))
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


def _first_last_ts(part: Part, rows: list[tuple[bytes, ...]], other_ts: dict[int, str]) -> None:
    """First and last stamp of the block's records, in row order."""

    def ts_of(r: int) -> str | None:
        row = rows[r]
        if row[0]:
            return norm_ts(row[0])
        if row[3]:
            return norm_ts(row[3][1:20])
        return other_ts.get(r)

    n = len(rows)
    part.first_ts = next(filter(None, map(ts_of, range(n))), None)
    part.last_ts = next(filter(None, map(ts_of, range(n - 1, -1, -1))), None)
