"""A summary `Part` from a `Batch` of the bulk reader (`dash.core.log.bulk`), by columns.

A shape's rows are numbers in columns, so what the summary needs of them is taken a column at
a time at C speed: counts, prefill token sums, the throughput samples and their stamps, the
peak, the last decode record and the first decode record of each 10 s (the alert replay's
candidates). The other records are folded one by one, as `PartBuilder` does. A block whose
decode records come from more than one source (two shapes, or a shape and the parser) is
folded record by record, in file order, so the order of throughput samples stays exact.
"""

from __future__ import annotations

from itertools import compress, islice, repeat
from operator import eq, ne

from dash.core.log.bulk import Batch, records, shape_record, stamp_text
from dash.core.log.shapes import Shape
from dash.core.views.summary import Part, PartBuilder
from dash.core.views.summary_feed import Candidate, ts_key

_EXACT = float(2 ** 53)


def _sum_ints(texts: list[bytes]) -> int:
    """The sum of plain unsigned numbers: `float()` reads bytes twice as fast as `int()`, and
    a float sum of whole numbers is exact while it stays below 2**53."""
    total = sum(map(float, texts))
    return int(total) if total < _EXACT else sum(map(int, texts))


def _column(shape: Shape, rows: list[tuple[bytes, ...]], key: str) -> list[bytes] | None:
    if key not in shape.keys:
        return None
    col = shape.cols[shape.keys.index(key)]
    if col is None:
        return None
    i = shape.prefix_groups + col
    return [r[i] for r in rows]


def part_of(batch: Batch, stamps: dict[bytes, str]) -> Part:
    """What the block adds to the summary (line numbers as the batch has them)."""
    decode = [i for i, s in enumerate(batch.shapes) if s.family.kind == "decode" and batch.rows[i]]
    # acceptance figures from the parser's records too: folded in file order, record by record
    other_decode = any(r["kind"] in ("decode", "spec") for r in batch.others)
    if len(decode) > 1 or (decode and other_decode):
        part = PartBuilder().feed_all(records(batch, stamps))
        part.lines = batch.lines
        return part
    part = PartBuilder().feed_all(batch.others)
    part.lines = batch.lines
    for i, shape in enumerate(batch.shapes):
        rows = batch.rows[i]
        if not rows:
            continue
        part.kinds[shape.family.kind] += len(rows)
        part.engines[shape.family.engine] += len(rows)
        if shape.family.kind == "prefill":
            part.new += _sum_ints(_column(shape, rows, "new_token") or [])
            part.cached += _sum_ints(_column(shape, rows, "cached_token") or [])
        else:
            _decode_rows(part, batch, i, stamps)
    _first_last(part, batch, stamps)
    return part


def _decode_rows(part: Part, batch: Batch, i: int, stamps: dict[bytes, str]) -> None:
    shape, rows = batch.shapes[i], batch.rows[i]
    lines = list(compress(batch.line_no, map(eq, batch.order, repeat(i))))
    ts: list[str | None] = [None] * len(rows)
    if shape.prefix_groups:
        ts = [stamp_text(r[0], stamps) for r in rows]
    keys = list(map(ts_key, ts))
    heads = [0, *compress(range(1, len(keys)), map(ne, keys, islice(keys, 1, None)))]
    part.candidates = [Candidate(lines[j], keys[j], shape_record(shape, lines[j], rows[j], stamps))
                       for j in heads]
    part.first_key, part.last_key = keys[0], keys[-1]
    part.last_decode = shape_record(shape, lines[-1], rows[-1], stamps)
    part.accepts = list(map(float, _column(shape, rows, "accept_len") or []))
    part.accept_rates = list(map(float, _column(shape, rows, "accept_rate") or []))
    gens = _column(shape, rows, "gen_throughput")
    if gens is None:
        return
    part.gens = list(map(float, gens))
    part.gen_ts = ts
    top = part.gens.index(max(part.gens))
    part.peak = (top, lines[top])


def _ts_of(batch: Batch, k: int, other: int, stamps: dict[bytes, str],
           cursors: list[int]) -> str | None:
    s = batch.order[k]
    if s < 0:
        ts = batch.others[other].get("ts")
        return ts if isinstance(ts, str) and ts else None
    shape = batch.shapes[s]
    return stamp_text(batch.rows[s][cursors[s]][0], stamps) if shape.prefix_groups else None


def _first_last(part: Part, batch: Batch, stamps: dict[bytes, str]) -> None:
    """The first and last stamp of the block's records, in file order."""
    part.first_ts = _scan_ts(batch, stamps, forward=True)
    part.last_ts = _scan_ts(batch, stamps, forward=False)


def _scan_ts(batch: Batch, stamps: dict[bytes, str], forward: bool) -> str | None:
    n = len(batch.order)
    if forward:
        cursors, other = [0] * len(batch.shapes), 0
        for k in range(n):
            ts = _ts_of(batch, k, other, stamps, cursors)
            if ts:
                return ts
            s = batch.order[k]
            if s < 0:
                other += 1
            else:
                cursors[s] += 1
        return None
    cursors, other = [len(r) - 1 for r in batch.rows], len(batch.others) - 1
    for k in range(n - 1, -1, -1):
        ts = _ts_of(batch, k, other, stamps, cursors)
        if ts:
            return ts
        s = batch.order[k]
        if s < 0:
            other -= 1
        else:
            cursors[s] -= 1
    return None
