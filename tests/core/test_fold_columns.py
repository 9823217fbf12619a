"""The column-at-a-time pieces of the summary's fold, against their one-at-a-time forms."""

from __future__ import annotations

import pickle
import re
from array import array
from pathlib import Path

import pytest
from bench_log import bench_parse
from hypothesis import given
from hypothesis import strategies as st

from dash.core.log.bulk import BlockReader, records
from dash.core.log.grammar import GRAMMAR
from dash.core.log.parse import parse_line
from dash.core.log.parser import LineParser
from dash.core.log.passes import Pass
from dash.core.log.timestamps import _PLAIN_STAMP, normalise_ts, normalised_joined
from dash.core.views.stamp_column import StampColumn
from dash.core.views.summary_feed import Candidate, ts_key
from dash.core.views.summary_fold import keys_of

STAMPS = [
    ["2026-03-01T08:00:41", "2026-03-01T08:00:49", "2026-03-01T08:00:50"],
    ["08:00:41", "08:00:42"],
    ["03-01T08:00:41"],
    ["2026-03-01T08:00:41.123", "2026-03-01T08:00:41.9"],  # a fraction: not the last digit
    ["2025-10-20T03:02:22Z", "2026-02-11T08:15:03+01:00"],  # a zone
    ["2026-03-01T08:00:41", "2026-03-01T08:00:41.5"],  # one with a fraction among plain ones
    ["", "08:00:41"],
    ["no stamp", "12"],
    [],
]


@pytest.mark.parametrize("texts", STAMPS)
def test_keys_of_is_ts_key_of_each(texts: list[str]) -> None:
    assert keys_of(texts) == [ts_key(t) for t in texts]


@given(st.lists(st.text(alphabet="0123456789:.-TZ+ ", max_size=24), max_size=8))
def test_keys_of_any_text_is_ts_key_of_each(texts: list[str]) -> None:
    assert keys_of(texts) == [ts_key(t) for t in texts]


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), min_size=1, max_size=30),
       st.integers(1, 10_000))
def test_a_pass_numbers_its_rows_as_the_lines_they_are_on(layout: list[tuple[int, int]],
                                                        first: int) -> None:
    """Rows between runs of other lines (empty ones too): each row's number is its line's."""
    lines: list[bytes] = []
    for others, empties in layout:
        lines += [b"other line"] * others + [b""] * empties + [b"ROW 7"]
    text = b"\n" + b"\n".join(lines) + b"\n"
    p = Pass(re.compile(rb"ROW (7)"), 0, text, re.compile(rb"\n()()"))
    total = p.count_lines(first)
    assert total == len(lines) + 1  # the newline before the first line too
    assert p.lines == [first + i for i, line in enumerate(lines) if line == b"ROW 7"]


def _column(stamps: list[bytes]) -> StampColumn | None:
    joined = normalised_joined(stamps)
    return None if joined is None else StampColumn.of(joined, len(stamps))


def test_a_block_of_plain_stamps_is_one_text_read_one_by_one() -> None:
    raw = [b"2026-03-01 08:00:%02d" % s for s in (41, 49, 50, 59)]
    col = _column(raw)
    assert col is not None
    texts = [normalise_ts(r.decode()) for r in raw]
    assert len(col) == 4 and list(col) == texts and col == texts
    assert [col[i] for i in range(-4, 4)] == texts + texts
    assert col[-2:] == texts[-2:] and col[1:3] == texts[1:3] and col[5:] == []
    with pytest.raises(IndexError):
        col[4]
    assert [k.decode() for k in col.bucket_keys()] == [ts_key(t) for t in texts]
    back = pickle.loads(pickle.dumps(col))
    assert back == col and list(back) == texts
    assert len(pickle.dumps(col)) < 2 * len(b"\n".join(raw))


@pytest.mark.parametrize("raw", [
    [b"2026-03-01 08:00:41.123", b"2026-03-01 08:00:41.456"],  # fractions
    [b"2026-03-01 08:00:41", b"08:00:42"],  # two widths
    [b"2026-03-01 08:00:41", b"2026-03-01 08:00:41,5"],
    [b"2025-10-20T03:02:22Z"],  # not a plain bracket stamp
])
def test_stamps_of_other_forms_are_kept_as_texts(raw: list[bytes]) -> None:
    assert _column(raw) is None


def test_a_candidate_of_a_shape_row_is_made_a_record_where_kept() -> None:
    """A decode row the alert replay may keep is carried as its shape's row, its record made
    (with its line shifted as its part was) only when asked for."""
    text = (b"\n[2026-03-01 08:00:41] Decode batch, #running-req: 5, #token: 40, token usage: 0.10, "
            b"cuda graph: True, gen throughput (token/s): 12.50, #queue-req: 0\n")
    reader = BlockReader(LineParser(GRAMMAR))
    reader.read(text, len(text), 1)  # learns the line's shape
    batch = reader.read(text, len(text), 1)
    assert batch.count(0) == 1
    row = batch.row_of(0, 0)
    cand = Candidate(7, "2026-03-01T08:00:4", (batch.shapes[0], b"\n".join(row)))
    cand = pickle.loads(pickle.dumps(cand))
    cand.shift(100)
    want = parse_line(text.decode().strip(), 107)
    assert cand.record() == want


def test_the_passes_over_a_block_share_the_prefixes_they_checked() -> None:
    """A second shape's rows are on the seconds of the first's: their prefixes, checked by
    the first pass, are not checked again; each row still reads its own stamp."""
    lines = []
    for s in range(3):
        ts = b"[2026-03-01 08:00:%02d] " % s
        lines.append(ts + b"Prefill batch, #new-seq: 1, #new-token: 5, #cached-token: 0, "
                     b"token usage: 0.01, #running-req: 1, #queue-req: 0")
        lines.append(ts + b"Decode batch, #running-req: 1, #token: 9, token usage: 0.01, "
                     b"cuda graph: True, gen throughput (token/s): %d.50, #queue-req: 0" % s)
    text = b"\n" + b"\n".join(lines) + b"\n"
    reader = BlockReader(LineParser(GRAMMAR))
    reader.read(text, len(text), 1)
    batch = reader.read(text, len(text), 1)
    assert [batch.count(s) for s in range(2)] == [3, 3]
    first, second = batch._passes
    assert first.heads is second.heads
    want = [parse_line(line.decode(), n) for n, line in enumerate(lines, 1)]
    assert records(batch, reader.stamps) == want


def test_a_prefix_that_is_no_bracket_is_put_back_beside_known_ones() -> None:
    known: tuple[dict[bytes, bytes], dict[bytes, bytes]] = ({b"[08:00:01]": b"08:00:01"},
                                                            {b"[08:00:01]": b""})
    vouch = re.compile(rb"\n\[([0-9:]{8})()\]")
    text = b"\n[08:00:01]ROW 1\n[08:00:02]ROW 2\n<not one!>ROW 3\n"
    p = Pass(re.compile(rb"ROW(?:(?<=\n([^\n]{10})ROW)) ([0-9])"), 1, text, vouch, known)
    assert p.count == 2 and p.column(0) == [b"1", b"2"]
    assert p.heads is known and known[0][b"[08:00:02]"] == b"08:00:02"
    assert b"<not one!>" not in known[0]
    assert p.remainder() == b"\n[08:00:01]\n[08:00:02]\n<not one!>ROW 3\n"


def test_a_part_read_in_another_process_is_a_few_objects(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """What a reading process hands over of a block (its decode rows' figures, stamps, lines
    and alert candidates) is pickled as columns, not an object a row; its lines are shifted
    where asked for, and the summary is the one a single process makes."""
    from dash.commands.summary import SummaryJob, summarize
    from dash.sources import logread

    path = tmp_path / "mixed.log"
    bench_parse().generate(path, 1)
    scan = logread.Scan(path)
    parts = SummaryJob().piece(scan)
    part = max(parts, key=lambda p: len(p.gens))
    assert len(part.gens) > 200
    assert isinstance(part.gens, array) and isinstance(part.gen_lines, array)
    assert isinstance(part.gen_ts, StampColumn)
    rows = [c.payload for c in part.candidates[:-1]]
    assert rows and all(isinstance(r, tuple) and isinstance(r[1], bytes) for r in rows)
    back = pickle.loads(pickle.dumps(part, pickle.HIGHEST_PROTOCOL))
    back.shift(1000)
    assert back.gen_lines_shift == 1000 and list(back.gen_lines) == list(part.gen_lines)
    assert list(back.gens) == list(part.gens) and list(back.gen_ts) == list(part.gen_ts)
    one = summarize(path)
    monkeypatch.setattr(logread, "PARALLEL_MIN", 0)
    monkeypatch.setattr(logread, "PIECE", 60_000)
    monkeypatch.setenv("KDASH_PROCESSES", "2")
    assert summarize(path) == one


@given(st.lists(st.sampled_from([b"2026-03-01 08:00:41", b"08:00:41", b"03-01 08:00:41",
                                 b"2026-03-01 08:00:41,123", b"2026-03-01 08:00:41.5",
                                 b"2026-03-01  8:00:41", b"2026-03-01T08:00:41Z", b"", b"x",
                                 b"2026-03-01 08:00:4a", b"2026-13-01 08:00:41"]),
                max_size=6),
       st.integers(0, 9))
def test_stamps_joined_and_normalised_are_each_normalised(stamps: list[bytes], d: int) -> None:
    """The check that a block's stamps are all one plain form gives what removing each plain
    stamp gives (nothing left: all plain)."""
    stamps = [s.replace(b"1", b"%d" % d) for s in stamps]
    joined = b"\n".join(stamps)
    plain = not _PLAIN_STAMP.sub(b"", joined)
    want = joined.replace(b",", b".").replace(b" ", b"T") if plain else None
    assert normalised_joined(stamps) == want
    if want and all(stamps):
        assert want.decode().split("\n") == [normalise_ts(s.decode()) for s in stamps]
