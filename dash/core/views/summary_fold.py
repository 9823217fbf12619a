"""A summary `Part` from a `Batch` of the bulk reader (`dash.core.log.bulk`), by columns.

A shape's rows are numbers in columns, so what the summary needs of them is taken a column at
a time at C speed: counts, prefill token sums, the throughput samples and their stamps, the
peak, the last decode record and the first decode record of each 10 s (the alert replay's
candidates); only those few rows become records. The other records are folded one by one,
as `PartBuilder` does. A block whose decode records come from more than one source (two
shapes, or a shape and the parser) is folded record by record, in file order, so the order of
throughput samples stays exact. Rows that name a DP rank or a vLLM engine carry its key beside
each sample (the merge sums the ranks) and give each rank its first row of each 10 s as a
candidate.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Sequence
from functools import partial
from itertools import compress, islice, repeat
from operator import getitem, ne

from dash.core.log.batch import Batch
from dash.core.log.bulk import records, shape_record
from dash.core.log.parse import Record
from dash.core.log.timestamps import normalise_stamps, normalised_joined
from dash.core.state.ranks import rank_key
from dash.core.state.server_log import STATS_KINDS
from dash.core.views.stamp_column import StampColumn
from dash.core.views.summary import Part, PartBuilder
from dash.core.views.summary_feed import Candidate, ts_key

_EXACT = float(2 ** 53)
KEEP = frozenset({"new_token", "cached_token", "decode"})
"""The values the summary takes a column at a time (`BlockReader(keep=...)`): a decode row's
all (a few become whole records), a prefill row's token counts."""


def _sum_ints(texts: list[bytes] | None) -> int:
    """The sum of plain unsigned numbers: `float()` reads bytes twice as fast as `int()`, and
    a float sum of whole numbers is exact while it stays below 2**53."""
    if not texts:
        return 0
    total = sum(map(float, texts))
    return int(total) if total < _EXACT else sum(map(int, texts))


class Stamps:
    """Normalised stamps, each worked out once per distinct text, and their 10-second keys."""

    def __init__(self, texts: dict[bytes, str]) -> None:
        self.texts = texts

    def text(self, col: list[bytes]) -> list[str]:
        texts = self.texts
        fresh = list(set(col).difference(texts))
        texts.update(zip(fresh, normalise_stamps(fresh), strict=True))
        return list(map(texts.__getitem__, col))

    def text_and_key(self, col: list[bytes]) -> tuple[list[str], list[str | None]]:
        # a key per row: a block's decode rows have a stamp each second, so a key per
        # distinct stamp would only add the lookups
        texts = self.text(col)
        return texts, keys_of(texts)


_IN_SECONDS = re.compile(r"(?:[^\n]*:[^:\n]{2}\n)*")
_LESS_LAST = slice(0, -1)


def keys_of(texts: list[str]) -> list[str | None]:
    """`ts_key` of each stamp. Where every one ends in its seconds (`...:41`: no fraction and
    no zone, as a bracket prints them), the key is the stamp less its last digit, cut at C
    speed instead of a call a row."""
    if texts and _IN_SECONDS.fullmatch("\n".join(texts) + "\n"):
        return list(map(getitem, texts, repeat(_LESS_LAST)))
    return list(map(ts_key, texts))


def _column(stamps: list[bytes]) -> StampColumn | None:
    """A block's stamps as one text (`StampColumn`), where they are plain, of one width and
    end in their seconds: normalised at C speed, read one by one only where kept."""
    joined = normalised_joined(stamps)
    return None if joined is None else StampColumn.of(joined, len(stamps))


def _key_text(keys: list[bytes], j: int) -> str:
    return keys[j].decode("ascii")


def _rank_keys(batch: Batch, s: int) -> list[str | None] | None:
    """Each row's rank (`dash.core.state.ranks.rank_key`); None when no row names one."""
    engines = batch.column(s, "engine_index")
    if engines is not None:
        keys = {b: rank_key({"engine_index": int(b)}) for b in set(engines)}
        return [keys[b] for b in engines]
    if not batch.shapes[s].prefix_groups:
        return None
    tags = batch.tags(s)
    named = {b: rank_key({"rank": b.decode("ascii").strip() or None}) for b in set(tags)}
    if all(k is None for k in named.values()):
        return None
    return [named[b] for b in tags]


def _heads(keys: Sequence[object], ranks: list[str | None] | None
           ) -> tuple[list[int], set[str | None]]:
    """The first row of each 10 s (of each rank, when rows name ranks), and the ranks of the
    last 10 s."""
    if ranks is None or len(set(ranks)) == 1:
        changes = compress(range(1, len(keys)), map(ne, keys, islice(keys, 1, None)))
        return [0, *changes], {ranks[0] if ranks else None}
    heads: list[int] = []
    seen: set[str | None] = set()
    bucket: object = object()
    for j, (key, rank) in enumerate(zip(keys, ranks, strict=True)):
        if key != bucket:
            bucket, seen = key, set()
        if rank not in seen:
            seen.add(rank)
            heads.append(j)
    return heads, seen


def part_of(batch: Batch, stamps: dict[bytes, str]) -> Part:
    """What the block adds to the summary (line numbers as the batch has them)."""
    counts = [batch.count(s) for s in range(len(batch.shapes))]
    decode = [s for s, shape in enumerate(batch.shapes) if shape.family.kind == "decode"
              and counts[s]]
    # acceptance and estimated figures from the parser's records too: folded in file order,
    # record by record
    other_decode = any(r["kind"] in ("decode", "spec", "mfu") for r in batch.others)
    if len(decode) > 1 or (decode and other_decode):
        part = PartBuilder().feed_all(records(batch, stamps))
        part.lines = batch.lines
        return part
    part = PartBuilder().feed_all(batch.others)
    marks = Stamps(stamps)
    for s, shape in enumerate(batch.shapes):
        if not counts[s]:
            continue
        part.kinds[shape.family.kind] += counts[s]
        part.engines[shape.family.engine] += counts[s]
        if shape.family.kind == "prefill":
            part.new += _sum_ints(batch.column(s, "new_token"))
            part.cached += _sum_ints(batch.column(s, "cached_token"))
        else:
            _decode_rows(part, batch, s, marks)
    _first_last(part, batch, marks)
    _first_last_stats(part, batch, marks)
    part.lines = batch.lines
    return part


def _decode_rows(part: Part, batch: Batch, s: int, marks: Stamps) -> None:
    shape = batch.shapes[s]
    n = batch.count(s)
    ts: Sequence[str | None] = [None] * n
    keys: Sequence[object] = ts
    key_of: Callable[[int], str | None] = ts.__getitem__
    if shape.prefix_groups:
        column = _column(batch.stamps(s))
        if column is not None:  # the 10-second keys compared as bytes, made text where kept
            ts, keys = column, column.bucket_keys()
            key_of = partial(_key_text, keys)
        else:
            ts, keys = marks.text_and_key(batch.stamps(s))
            key_of = keys.__getitem__
    ranks = _rank_keys(batch, s)
    heads, part.last_ranks = _heads(keys, ranks)
    gens_col = batch.column(s, "gen_throughput")
    gens = list(map(float, gens_col)) if gens_col is not None else []
    top = gens.index(max(gens)) if gens else -1
    lines = batch.shape_lines(s)
    last = shape_record(shape, lines[n - 1], batch.row_of(s, n - 1), marks.texts)
    # a candidate's record is made only if the alert replay keeps it (a few in a long log)
    part.candidates = [Candidate(lines[j], key_of(j),
                                 last if j == n - 1 else (shape, b"\n".join(batch.row_of(s, j))),
                                 ranks[j] if ranks else None) for j in heads]
    part.first_key, part.last_key = key_of(0), key_of(-1)
    part.last_decode = last
    # as the records hold them: a ratio printed as a percent is read as its fraction
    part.accepts = batch.numbers(s, "accept_len") or []
    part.accept_rates = batch.numbers(s, "accept_rate") or []
    part.hit_rates = batch.numbers(s, "prefix_hit_rate") or []
    part.tflops = batch.numbers(s, "tflops_per_gpu") or []
    part.occupancy = batch.numbers(s, "fwd_occupancy") or []
    if gens_col is None:
        return
    # as arrays: a piece's parts are pickled by the reading process, unpickled by the merging one
    part.gens = array("d", gens)
    part.gen_ts, part.gen_lines = ts, array("q", lines)
    if ranks is not None:
        part.gen_ranks = ranks
    part.peak = (top, lines[top])


def _first_last_stats(part: Part, batch: Batch, marks: Stamps) -> None:
    """The block's first and last decode or prefill record: those of the parser's records
    (`PartBuilder` kept them) and the shapes' first and last rows, by line number."""
    ends: list[tuple[int, int, int]] = []  # (line, shape, row)
    for s, shape in enumerate(batch.shapes):
        n = batch.count(s)
        if n and shape.family.kind in STATS_KINDS:
            ends += [(batch.row_line(s, 0), s, 0), (batch.row_line(s, n - 1), s, n - 1)]
    if not ends:
        return

    def made(end: tuple[int, int, int]) -> Record:
        line, s, j = end
        return shape_record(batch.shapes[s], line, batch.row_of(s, j), marks.texts)

    first, last = min(ends), max(ends)
    if part.first_stats is None or first[0] < part.first_stats["line"]:
        part.first_stats = made(first)
    if part.last_stats is None or last[0] > part.last_stats["line"]:
        part.last_stats = made(last)


def _first_last(part: Part, batch: Batch, marks: Stamps) -> None:
    """The first and last stamp of the block's records, in file order (by line number)."""
    timed: list[tuple[int, str]] = []
    for s, shape in enumerate(batch.shapes):
        if shape.prefix_groups and batch.count(s):
            for j in (0, -1):
                stamp = marks.text([batch.stamp_of(s, j)])[0]
                timed.append((batch.row_line(s, j), stamp))
    stamped = [(r["line"], r["ts"]) for r in batch.others if isinstance(r.get("ts"), str)
               and r["ts"]]
    if stamped:
        timed += [stamped[0], stamped[-1]]
    if timed:
        part.first_ts = min(timed)[1]
        part.last_ts = max(timed)[1]
