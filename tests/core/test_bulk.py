"""The one reader: what `summary`, `export` and `replay` make of a log equals what parsing
every line gives, with learned shapes or without, in one process or several."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bench_log import bench_parse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dash.commands import summary as report
from dash.core.log.bulk import BlockReader, records
from dash.core.log.parse import PARSER, parse_line
from dash.core.views.records_json import dumps
from dash.core.views.summary import summarize_records
from dash.core.views.summary_feed import AlertFeed, Candidate
from dash.sources import logread, replay_read

REPO = Path(__file__).resolve().parents[2]
TS = "[2026-03-01 08:{m:02d}:{s:02d}] "
DECODE = ("Decode batch, #running-req: {r}, #token: {t}, token usage: 0.{u:02d}, cuda graph: True, "
          "gen throughput (token/s): {g}, #queue-req: {q}")
PREFILL = ("Prefill batch, #new-seq: {r}, #new-token: {t}, #cached-token: {c}, token usage: 0.{u:02d}, "
           "#running-req: {r}, #queue-req: {q}")
ACCESS = 'INFO:     127.0.0.1:{t} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
# Ratios printed as percents, from the servers' format strings: SGLang's device timer
# (`msg += f", fwd occupancy: {self.fwd_occupancy:.2f}%"`, 0.5.11-0.5.20; 0.5.21+ adds
# `f", fwd+idle occupancy: {fwd_idle_occupancy:.2f}%"`), its prefill line up to 0.4.2
# (`f"cache hit rate: {100.0 * tree_cache_hit_rate:.2f}%, "`), vLLM's stats line (`"GPU KV cache
# usage: %.1f%%, " "Prefix cache hit rate: %.1f%%"`, V1 0.7.3; `Engine %03d: ` before it from
# 0.8.5; V0's `Swapped`/`Pending` and `CPU KV cache usage: %.1f%%.`)
OCCUPANCY = DECODE + ", fwd occupancy: {p}%"
OCCUPANCY_IDLE = OCCUPANCY + ", fwd+idle occupancy: {p2}%"
PREFILL_OCCUPANCY = (PREFILL + ", #pending-token: {c}, cuda graph: False, "
                     "input throughput (token/s): {g}, fwd occupancy: {p}%")
PREFILL_HIT = ("Prefill batch. #new-seq: {r}, #new-token: {t}, #cached-token: {c}, "
               "cache hit rate: {p}%, token usage: 0.{u:02d}, #running-req: {r}, #queue-req: {q}")
VLLM = ("Avg prompt throughput: {v} tokens/s, Avg generation throughput: {v} tokens/s, "
        "Running: {r} reqs, Waiting: {q} reqs, GPU KV cache usage: {p1}%, "
        "Prefix cache hit rate: {p2}%")
VLLM_V0 = ("Avg prompt throughput: {v} tokens/s, Avg generation throughput: {v} tokens/s, "
           "Running: {r} reqs, Swapped: 0 reqs, Pending: {q} reqs, GPU KV cache usage: {p1}%, "
           "CPU KV cache usage: 0.0%.")
PERCENT_LINES = (OCCUPANCY, OCCUPANCY_IDLE, PREFILL_OCCUPANCY, PREFILL_HIT, VLLM)
UNKNOWN = DECODE + ", #new-field: {t}, est. new flag: True"


def reference(path: Path) -> dict[str, Any]:
    """The summary built from every record, one at a time."""
    scan = logread.Scan(path)
    records = list(scan)
    return report.document(path, summarize_records(records, logread.ref_time(path), scan.lines))


def _settings(monkeypatch: pytest.MonkeyPatch, chunk: int, parallel: bool) -> None:
    monkeypatch.setattr(logread, "CHUNK", chunk)
    monkeypatch.setattr(logread, "PARALLEL_MIN", 0 if parallel else 1 << 60)
    monkeypatch.setattr(logread, "PIECE", 40_000)  # several pieces on a small log


def fast(path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, parallel: bool) -> dict[str, Any]:
    _settings(monkeypatch, chunk, parallel)
    return report.summarize(path)


def export(path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, parallel: bool) -> bytes:
    """`kdash export`'s output, in this process (its workers too, when parallel)."""
    from dash.commands.export import JsonlJob

    _settings(monkeypatch, chunk, parallel)
    out: list[bytes] = []
    logread.fold(path, JsonlJob(), lambda _before, texts: out.extend(texts))
    return b"".join(out)


def naive_export(path: Path) -> bytes:
    """json.dumps of every record parse_line gives, line by line."""
    data = path.read_bytes().decode("utf-8", "replace")
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    recs = [parse_line(line, n) for n, line in enumerate(lines, 1)]
    return "".join(dumps(r) + "\n" for r in recs if r and r["kind"] != "unparsed").encode()


def timeline_records(path: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool) -> list[Any]:
    _settings(monkeypatch, 300, parallel)
    timeline = replay_read.load_timeline(path)
    assert list(timeline.times) == list(one_by_one(path).times), path.name
    return list(timeline.records)


def one_by_one(path: Path) -> Any:
    """The timeline of a log's records added one at a time (the reference for its times)."""
    from dash.core.state.timeline import Timeline

    timeline = Timeline(ref=logread.ref_time(path))
    for rec in logread.Scan(path):
        timeline.add(rec)
    timeline.finish()
    return timeline


# -- equivalence on real and generated logs ----------------------------------------------------

@pytest.mark.parametrize("chunk", [300, 4 << 20])
def test_every_real_log(real_logs: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    for path in sorted(real_logs.glob("*.log")):
        assert fast(path, monkeypatch, chunk, parallel=False) == reference(path), path.name
        assert export(path, monkeypatch, chunk, parallel=False) == naive_export(path), path.name


def test_every_real_log_read_by_several_processes(real_logs: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of 2 KB: most real logs are cut into several, each read by a worker."""
    monkeypatch.setenv("KDASH_PROCESSES", "2")
    for path in sorted(real_logs.glob("*.log")):
        monkeypatch.setattr(logread, "PIECE", 2048)
        one = export(path, monkeypatch, 300, parallel=False)
        monkeypatch.setattr(logread, "PIECE", 2048)
        assert export(path, monkeypatch, 300, parallel=True) == one, path.name
        assert fast(path, monkeypatch, 300, parallel=True) == reference(path), path.name
        assert timeline_records(path, monkeypatch, True) == list(logread.Scan(path)), path.name


def test_spawned_workers_read_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where fork is unavailable: every piece travels with its grammar to a fresh process."""
    path = tmp_path / "mixed.log"
    bench_parse().generate(path, 1)
    want = export(path, monkeypatch, 64 << 10, parallel=False)
    monkeypatch.setenv("KDASH_START", "spawn")
    monkeypatch.setenv("KDASH_PROCESSES", "2")
    monkeypatch.setattr(logread, "PIECE", 300_000)
    assert export(path, monkeypatch, 64 << 10, parallel=True) == want
    assert want == naive_export(path)


@pytest.mark.parametrize(("parallel", "processes"), [(False, "1"), (True, "2"), (True, "5")])
def test_bench_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool,
                   processes: str) -> None:
    path = tmp_path / "mixed.log"
    bench_parse().generate(path, 1)
    want = reference(path)
    monkeypatch.setenv("KDASH_PROCESSES", processes)
    got = fast(path, monkeypatch, 64 << 10, parallel)
    assert got == want
    assert want["records"]["decode"] > 500 and want["records"]["prefill"] > 1500
    assert want["lines"] == path.read_bytes().count(b"\n")
    assert export(path, monkeypatch, 64 << 10, parallel) == naive_export(path)
    assert timeline_records(path, monkeypatch, parallel) == list(logread.Scan(path))
    assert _shape_rows(path.read_bytes()) > 0.95 * (want["records"]["decode"]
                                                    + want["records"]["prefill"])


def test_summary_never_reads_the_bench_logs_rows_whole_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary's reader takes only some of a prefill row's values: reading a shape's rows
    whole again is a second split of the block, which once made every summary 1.3-1.45x
    slower (the block's first and last prefill row, asked for in every block)."""
    from dash.core.log.batch import Batch

    path = tmp_path / "mixed.log"
    bench_parse().generate(path, 1)
    whole: list[int] = []
    rows = Batch.rows

    def counted(self: Batch, s: int) -> list[tuple[bytes, ...]]:
        if self._layout.full[s] is not None:
            whole.append(s)
        return rows(self, s)

    monkeypatch.setattr(Batch, "rows", counted)
    got = fast(path, monkeypatch, 1 << 20, parallel=False)
    assert got["records"]["prefill"] > 1500
    assert not whole


def test_gzip_log_summarises_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "mixed.log"
    bench_parse().generate(path, 1)
    gz = tmp_path / "mixed.log.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    plain, packed = fast(path, monkeypatch, 1 << 20, True), fast(gz, monkeypatch, 1 << 20, True)
    assert {**packed, "path": str(path)} == plain
    assert export(gz, monkeypatch, 1 << 20, True) == export(path, monkeypatch, 1 << 20, True)


@pytest.mark.parametrize("fmt", ["0.5.12", "0.4.10", "0.4.3"])
@pytest.mark.parametrize("scenario", ["healthy", "oom-crash-restart"])
def test_simulated_formats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str,
                           scenario: str) -> None:
    from dash.sim import run as sim_run
    sim = sim_run.SimRun(tmp_path, scenario, log_format=fmt, start_epoch=1_750_000_000.0)
    sim.advance_to(1800.0)
    want = reference(sim.server_log)
    assert want["records"]["decode"] > 0
    assert fast(sim.server_log, monkeypatch, 4096, parallel=False) == want
    assert fast(sim.server_log, monkeypatch, 1 << 20, parallel=True) == want
    text = naive_export(sim.server_log)
    assert export(sim.server_log, monkeypatch, 4096, parallel=True) == text


# -- hypothesis: mixed lines, near misses included ---------------------------------------------

_num = st.integers(0, 99_999)
_gen = st.one_of(st.floats(0, 99_999, allow_nan=False).map(lambda f: f"{f:.2f}"),
                 st.sampled_from(["nan", "1e3", "-5.00", "12", "7.5x", ""]))
# percents as printed (`{:.2f}`, `%.1f`), and near misses: SGLang's first occupancy is `nan`,
# above 100 is no ratio
_ODD_PCT = ["nan", "100.00", "0.00", "100.50", "101.0", "-0.00", "1e2", "5", "", "99.995", "inf"]
_pct2 = st.one_of(st.floats(0, 100).map(lambda f: f"{f:.2f}"), st.sampled_from(_ODD_PCT))
_pct1 = st.one_of(st.floats(0, 100).map(lambda f: f"{f:.1f}"), st.sampled_from(_ODD_PCT))


SWA = ("Decode batch, #running-req: {r}, #full token: {t}, full token usage: 0.{u:02d}, "
       "#swa token: {c}, swa token usage: 0.{q:02d}, cuda graph: True, "
       "gen throughput (token/s): {g}, #queue-req: {q}, ")
MAMBA = ("Decode batch, #running-req: {r}, #full token: {t}, full token usage: 0.{u:02d}, "
         "mamba num: {c}, mamba usage: 0.{q:02d}, cuda graph: True, "
         "gen throughput (token/s): {g}, #queue-req: {q}, ")


_CLEAN = [
    DECODE, DECODE, DECODE, DECODE + ", ", DECODE.replace(", cuda graph: True", ""),
    DECODE.replace("batch,", "batch."), DECODE + ", Decode batch", DECODE.replace("#token", "#full token"),
    DECODE.replace("cuda graph: True", "gen throughput (token/s): {u}"),
    DECODE.replace("cuda graph", "accept len: 2.1, cuda graph"), DECODE.replace(": {g}", ": {g}x"),
    # SGLang --enable-mfu-metrics: plain figures, so learned shapes read them (the summary's perf)
    DECODE + ", est. decode TFLOPS/s (per GPU): {g}, est. read BW (GB/s per GPU): 1.50",
    DECODE + ", est. decode TFLOPS/s (per GPU): 12.50, fwd occupancy: 0.{u:02d}%",
    *PERCENT_LINES, OCCUPANCY, VLLM, "Engine 000: " + VLLM, "2 Engines Aggregated: " + VLLM,
    VLLM_V0, VLLM.replace("GPU KV", "XPU KV"), PREFILL_HIT.replace("{p}%", "{p}"),
    OCCUPANCY.replace("{p}%", "{p}%%"), OCCUPANCY.replace("{p}%", "{p} %"),
    # fields kdash does not know (a newer server's): a plain number is matched and skipped
    UNKNOWN, UNKNOWN, OCCUPANCY + ", new ratio: {p2}%", PREFILL + ", #future-req: {g}",
    DECODE + ", mode: chunked", DECODE.replace("#queue-req", "#new-field: {g}, #queue-req"),
    "Decode batch, #new-field: {t}, #queue-req: {q}",
    # hybrid models: a sliding-window pool beside the full one (its usage: the larger), and
    # a mamba state pool (its usage: the full pool's)
    SWA, SWA, MAMBA, PREFILL.replace("token usage: 0.{u:02d}", "full token usage: 0.{u:02d}, "
                                     "swa token usage: 0.{r:02d}"),
    PREFILL, PREFILL, PREFILL, PREFILL + ", Decode batch, x", PREFILL.replace("{c}", "{g}"),
    PREFILL.replace("batch,", "batch."), PREFILL.replace("{c}, ", "{c}"),
    ACCESS, ACCESS, ACCESS, ACCESS.replace("POST", "GET /error"), ACCESS.replace("{t}", "x"),
    # access lines that name a stats head or an event phrase are the parser's to read
    ACCESS.replace("POST", "GET /Prefill batch"), ACCESS.replace("OK", "OK Shutting down"),
    ACCESS.replace("POST", "GET /Killed"),
    "KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: 0.4 -> 0.5",
    "Killed", "torch.OutOfMemoryError: CUDA out of memory.", "Decode batch, garbage", "", "hello",
    "Received sigquit from a child process.", "Prefill batch, nonsense", "] Decode batch",
]
# lines that make the block scanner hand the whole block to the parser
_NOISY = [
    "Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: {g} tokens/s, Running: 3 reqs",
    "#running-req: {r}, #token: {t}, token usage: 0.{u:02d}, gen throughput (token/s): {g}",
    DECODE + "\r", PREFILL + "\x1b[0m", DECODE + " ^[[0m", "\r", PREFILL + "^M",
]


@st.composite
def _line(draw: st.DrawFn, noisy: bool) -> str:
    m, s, dp = draw(st.integers(0, 59)), draw(st.integers(0, 59)), draw(st.integers(0, 3))
    f = {"r": draw(_num), "t": draw(_num), "u": draw(st.integers(0, 99)), "q": draw(_num),
         "g": draw(_gen), "c": draw(_num), "p": draw(_pct2), "p1": draw(_pct1),
         "p2": draw(_pct2), "v": draw(_pct1)}
    prefix = draw(st.sampled_from([TS.format(m=m, s=s), TS.format(m=m, s=s), "",
                                   f"[08:{m:02d}:{s:02d} TP0] ", "(APIServer pid=1) ",
                                   f"[2026-03-01 08:{m:02d}:{s:02d} DP1 TP3] ",
                                   # several DP ranks: their throughput is summed
                                   f"[2026-03-01 08:{m:02d}:{s:02d} DP{dp} TP{dp} EP{dp}] ",
                                   # stamp-wide brackets that are not stamps
                                   f"[2026-03-01T08:{m:02d}:{s:02d}] ", "[a]bcdefghijklmnopqr] ",
                                   f"INFO 03-01 08:{m:02d}:{s:02d} [loggers.py:116] "]))
    body = draw(st.sampled_from(_CLEAN + _NOISY if noisy else _CLEAN))
    return prefix + body.format(**f)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), noisy=st.booleans(), dup=st.integers(1, 3),
       chunk=st.sampled_from([200, 1500, 1 << 20]))
def test_mixed_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: st.DataObject,
                     noisy: bool, dup: int, chunk: int) -> None:
    lines = data.draw(st.lists(_line(noisy), min_size=1, max_size=60))
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(lines * dup) + "\n", encoding="utf-8")
    assert fast(path, monkeypatch, chunk, parallel=False) == reference(path)
    assert export(path, monkeypatch, chunk, parallel=False) == naive_export(path)


# -- the block reader on its own -----------------------------------------------------------

def _read_twice(block: bytes, first_line: int = 1) -> tuple[BlockReader, list[Any]]:
    """Read a block twice with one reader: the second time, with the shapes it learned."""
    reader = BlockReader(PARSER)
    buf = b"\n" + block
    reader.read(buf, len(buf), first_line)
    return reader, records(reader.read(buf, len(buf), first_line), reader.stamps)


def _shape_rows(data: bytes) -> int:
    reader, _ = _read_twice(data[:200_000])
    buf = b"\n" + data[:data.rfind(b"\n") + 1]
    return reader.read(buf, len(buf), 1).rows_total


def _dec(s: int, g: str = "10.00") -> bytes:
    return (TS.format(m=1, s=s) + DECODE.format(r=1, t=2, u=3, g=g, q=0)).encode()


def _naive_block(block: bytes, first_line: int) -> list[Any]:
    out = []
    for n, line in enumerate(block.decode("utf-8", "replace").split("\n")[:-1], first_line):
        rec = parse_line(line, n)
        if rec is not None:
            out.append(rec)
    return out


def test_learned_shapes_read_the_lines_they_came_from() -> None:
    pre = (TS.format(m=1, s=0) + PREFILL.format(r=1, t=300, c=100, u=5, q=0)).encode()
    acc = (TS.format(m=1, s=0) + ACCESS.format(t=5)).encode()
    block = b"\n".join([acc, _dec(1, "5.00"), pre, acc, _dec(1, "9.50"), b"Killed",
                        _dec(12, "1.00")]) + b"\n"
    reader, got = _read_twice(block, 101)
    assert {s.family.name for s in reader.shapes} == {"decode", "prefill"}
    assert got == _naive_block(block, 101)
    assert [r["line"] for r in got] == [102, 103, 105, 106, 107]


@pytest.mark.parametrize("bad", [
    b"\r", b"\x1b[0m", b" ^[[0m", b"^M", b", Decode batch", b"x",
    b"\n" + (TS.format(m=1, s=0) + ACCESS.format(t=1) + " Shutting down").encode(),
    b"\n" + (TS.format(m=1, s=0) + ACCESS.format(t=1) + " Decode batch").encode(),
    b"\n" + (TS.format(m=1, s=0) + ACCESS.format(t=1)).encode() * 3,
])
def test_lines_the_parser_would_read_differently_are_left_to_it(bad: bytes) -> None:
    block = _dec(1) + b"\n" + _dec(2) + bad + b"\n"
    assert _read_twice(block)[1] == _naive_block(block, 1)


def test_access_lines_that_name_a_stats_head_are_not_passed_over() -> None:
    """An HTTP server's line that holds a stats head is no row: `GET /Prefill batch` is an
    unparsed line, as the parser says."""
    acc = [(TS.format(m=1, s=s % 60) + ACCESS.format(t=s)).encode() for s in range(900)]
    odd = (TS.format(m=2, s=0) + ACCESS.format(t=7).replace("POST", "GET /Prefill batch")).encode()
    block = b"\n".join([_dec(1), *acc[:450], odd, *acc[450:], _dec(2)]) + b"\n"
    reader, got = _read_twice(block)
    assert got == _naive_block(block, 1)
    assert [r["kind"] for r in got] == ["decode", "unparsed", "decode"]


def test_a_prefilter_that_is_no_plain_search_parses_every_line() -> None:
    """Where the parser's prefilter is not the plain keyword search the reader derives its
    own from, the reader hands every line to the parser (and gives the same records)."""
    import re

    from dash.core.log.grammar import GRAMMAR
    from dash.core.log.parser import LineParser

    parser = LineParser(GRAMMAR)
    parser.interest = re.compile(parser.interest.pattern, re.IGNORECASE)
    seen: list[str] = []
    parse = parser.parse
    parser.parse = lambda text, n=0: seen.append(text) or parse(text, n)  # type: ignore[method-assign]
    alone = TS.format(m=9, s=9).encode()  # a line of a stamp alone: the parser's to read
    block = b"\n".join([_dec(1), b"Killed", b"hello", b"decode BATCH, x", _dec(2), b"", alone,
                        _dec(3)]) + b"\n"
    reader = BlockReader(parser)
    buf = b"\n" + block
    reader.read(buf, len(buf), 1)
    seen.clear()
    batch = reader.read(buf, len(buf), 1)
    got = records(batch, reader.stamps)
    want = [r for n, line in enumerate(block.decode().split("\n")[:-1], 1)
            if (r := parse(line, n)) is not None]
    assert got == want and [r["kind"] for r in got] == ["decode", "event", "decode", "decode"]
    assert {"hello", "decode BATCH, x"} <= set(seen)
    # what a row leaves of its line (its prefix) is not read; a line of a prefix alone is
    assert batch.rows_total == 3 and seen.count(alone.decode()) == 1
    assert not any(t.startswith("[2026-03-01 08:01:0") for t in seen)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from([_dec(1), _dec(15, "3.00")])),
                max_size=30))
def test_garbage_never_raises(pieces: list[bytes]) -> None:
    block = b"\n".join(pieces) + b"\n"
    assert _read_twice(block)[1] == _naive_block(block, 1)


def test_alert_feed_stays_bounded_and_even() -> None:
    feed = AlertFeed(max_decodes=10)
    rec = {"kind": "event", "event": "oom", "line": 5}
    feed.add([Candidate(i, None, {"kind": "decode", "line": i}) for i in range(0, 100, 2)], [rec])
    assert feed.stride == 8
    out = feed.records()
    assert [r["line"] for r in out] == [0, 5, 16, 32, 48, 64, 80, 96]


# -- the command -------------------------------------------------------------------------------

def _kdash(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dash", *args], capture_output=True, text=True,
                          timeout=120, check=False, cwd=REPO)


def test_summary_lists_an_oom(real_logs: Path) -> None:
    for log in sorted(real_logs.glob("*oom*")):
        if "retract" in log.name:
            continue  # retractions only, no OOM error in that excerpt
        doc = json.loads(_kdash("summary", str(log), "--json").stdout)
        assert "server_oom" in [a["id"] for a in doc["alerts"]], log.name
        text = _kdash("summary", str(log)).stdout
        assert "server_oom" in text and "CRIT" in text


@given(st.text(max_size=30))
def test_stamp_json_is_what_json_writes(text: str) -> None:
    from dash.core.views.records_json import json_text

    assert json_text(text) == json.dumps(text).encode()


def test_blocks_without_decode_lines_in_a_worker_thin_as_in_one_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A block of access lines alone, read by a worker, comes back pickled: the next block's
    decode line of the same 10 s is still no new candidate for the alert replay."""
    path = tmp_path / "sparse.log"
    lines = []
    for s in range(40):
        f = {"r": s, "t": 100 + s, "u": 1, "g": "10.00", "q": 0}
        lines.append(TS.format(m=0, s=s) + DECODE.format(**f))
        lines += [TS.format(m=0, s=s) + ACCESS.format(t=30000 + k) for k in range(12)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("KDASH_PROCESSES", "2")
    assert fast(path, monkeypatch, 300, parallel=True) == reference(path)


def test_export_of_a_log_with_more_stamps_than_a_writer_keeps(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A decode line a second for hours: a piece holds more distinct stamps than the stamp
    cache of its JSON writer, which is emptied between blocks, never within one."""
    from dash.core.views import records_json

    monkeypatch.setattr(records_json, "_MAX_STAMPS", 50)
    path = tmp_path / "seconds.log"
    f = {"r": 5, "t": 100, "u": 1, "g": "10.00", "q": 0}
    path.write_text("".join(f"[2026-03-01 0{i // 3600}:{i // 60 % 60:02d}:{i % 60:02d}] "
                            + DECODE.format(**f) + "\n" for i in range(400)), encoding="utf-8")
    assert export(path, monkeypatch, 4096, parallel=False) == naive_export(path)


# -- rows by their literal: lines that look like a row but are not --------------------------

def _look_alikes() -> list[bytes]:
    body = DECODE.format(r=1, t=2, u=3, g="4.00", q=0)
    return [
        b"[2026-03-01 08:61:02] " + body.encode(),  # a bad stamp, of a row's width
        b"[2026-03-01T08:01:02] " + body.encode(),  # no bracket stamp, of a row's width
        b"abcdefghijklmnopqrstu " + body.encode(),  # no bracket at all, of a row's width
        b"[2026-03-01 08:01:02] x" + body.encode(),  # the literal inside another line
        b"[2026-03-01 08:01:02] " + body.replace(", cuda graph: True", "").encode(),  # short
        b"[2026-03-01 08:01:02]  " + body.encode(),  # two spaces after the bracket
        (ACCESS.format(t=1) + " " + body).encode(),  # the whole body inside an access line
        body.encode(),  # the bare form, beside bracket rows
    ]


@pytest.mark.parametrize("odd", _look_alikes())
def test_a_line_that_looks_like_a_row_is_the_parsers(odd: bytes) -> None:
    block = b"\n".join([_dec(1), _dec(2), odd, _dec(3), odd, _dec(4)]) + b"\n"
    reader, got = _read_twice(block)
    assert got == _naive_block(block, 1)
    buf = b"\n" + block
    batch = reader.read(buf, len(buf), 1)
    assert batch.count(0) == 4 and batch.shape_lines(0) == [1, 2, 4, 6]


def test_rank_tags_and_stamp_forms_are_learned_as_prefix_widths() -> None:
    """Prefixes of several widths (rank tags, a time alone, a fraction): each is learned from
    the line the parser reads, and its rows are then rows."""
    body = DECODE.format(r=1, t=2, u=3, g="4.00", q=0)
    prefixes = ["[2026-03-01 08:00:0{s}] ", "[2026-03-01 08:00:0{s} TP0] ", "[08:00:0{s} TP1] ",
                "[2026-03-01 08:00:0{s} DP1 TP3] ", "[2026-03-01 08:00:0{s}.123] ",
                "[2026-03-01 08:00:0{s} DP10 TP3] "]
    lines = [(p.format(s=s) + body).encode() for s in range(8) for p in prefixes]
    block = b"\n".join(lines) + b"\n"
    reader, got = _read_twice(block)
    assert got == _naive_block(block, 1)
    assert sorted(len(w) for w in reader._widths) == [4]  # at most MAX_WIDTHS: the rest parsed
    buf = b"\n" + block
    batch = reader.read(buf, len(buf), 1)
    assert batch.rows_total == 8 * 5 and [r["rank"] for r in batch.others] == ["DP10 TP3"] * 8


def test_a_reader_that_takes_some_values_reads_rows_whole_when_asked() -> None:
    """A summary's reader takes a prefill row's token counts only; its records are still
    whole, read from the block again."""
    from dash.core.views.summary_fold import KEEP

    pre = [(TS.format(m=1, s=s) + PREFILL.format(r=s, t=300 + s, c=100, u=5, q=7)).encode()
           for s in range(5)]
    block = b"\n".join([*pre[:2], _dec(1), *pre[2:], b"Killed", _dec(2)]) + b"\n"
    reader = BlockReader(PARSER, KEEP)
    buf = b"\n" + block
    reader.read(buf, len(buf), 1)
    batch = reader.read(buf, len(buf), 1)
    assert batch.rows_total == 7
    assert records(batch, reader.stamps) == _naive_block(block, 1)


@pytest.mark.parametrize("prefixes", [["[2026-03-01 08:01:{s:02d}] "],
                                      ["[2026-03-01 08:01:{s:02d} TP0] ", "[08:01:{s:02d} DP1 TP3] "],
                                      [""]])
def test_a_shapes_first_and_last_rows_read_alone_are_the_rows_read_whole(
        prefixes: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A summary asks for each block's first and last prefill row whole, where its reader took
    their token counts only: each is matched alone where its pass found it, equal to the row
    the block read again gives, and the block is not split a second time for them."""
    import dash.core.log.batch as batch_mod
    from dash.core.views.summary_fold import KEEP

    pre = [(prefixes[s % len(prefixes)].format(s=s)
            + PREFILL.format(r=s, t=300 + s, c=100, u=5, q=7)).encode() for s in range(9)]
    # a line that holds the shape's head inside its text is no row
    odd = b"note: Prefill batch, #new-seq: 1 was logged"
    block = b"\n".join([odd, *pre[:4], _dec(1), *pre[4:], b"Killed", _dec(2), odd]) + b"\n"
    reader = BlockReader(PARSER, KEEP)
    buf = b"\n" + block
    reader.read(buf, len(buf), 1)
    batch = reader.read(buf, len(buf), 1)
    s = next(i for i, shape in enumerate(batch.shapes) if shape.family.kind == "prefill")
    n = batch.count(s)
    assert n == 9
    splits = []
    monkeypatch.setattr(batch_mod, "Pass", lambda *a: splits.append(a))
    ends = batch.row_of(s, 0), batch.row_of(s, n - 1)
    assert not splits
    monkeypatch.undo()
    whole = batch.rows(s)
    assert ends == (whole[0], whole[-1])
    assert batch.row_of(s, 3) == whole[3]


def test_a_timeline_reads_as_the_list_of_its_records_across_its_pieces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces kept as they came (their values read into numbers when first asked for): any
    index and slice, across pieces and a cap that cuts one, and two threads reading at once
    give the records one process reads."""
    import threading

    path = tmp_path / "mixed.log"
    bench_parse().generate(path, 1)
    want = list(logread.Scan(path))
    _settings(monkeypatch, 64 << 10, parallel=False)
    monkeypatch.setattr(logread, "PIECE", 100_000)
    got: list[list[Any]] = []

    def read(timeline: Any) -> None:
        got.append(list(timeline.records))

    timeline = replay_read.load_timeline(path)
    readers = [threading.Thread(target=read, args=(timeline,)) for _ in range(2)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    assert got == [want, want]
    cut = replay_read.load_timeline(path, cap=len(want) // 3)
    records = cut.records
    n = len(records)
    assert n == len(want) // 3 and cut.cut
    assert records[:] == want[:n] and records[-1] == want[n - 1] and records[0] == want[0]
    for lo in range(0, n, n // 7):
        for width in (0, 1, 997, n // 5):
            assert records[lo:lo + width] == want[lo:min(n, lo + width)]
    assert records[5:n:1000] == want[5:n:1000]
    with pytest.raises(IndexError):
        records[n]


@pytest.mark.parametrize("parallel", [False, True])
def test_estimated_figures_read_by_shapes_summarise_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool) -> None:
    """SGLang's `--enable-mfu-metrics` decode lines print plain figures: learned shapes read
    them, and the summary's `perf` is what the records give."""
    mfu = DECODE + (", est. decode TFLOPS/s (per GPU): {f}, est. read BW (GB/s per GPU): 810.00, "
                    "est. write BW (GB/s per GPU): 4.00")
    lines = [TS.format(m=i // 60 % 60, s=i % 60) + mfu.format(
        r=8, t=100 + i, u=10, g=f"{50 + i % 9:.2f}", q=0, f=f"{10 + i % 7:.2f}")
        for i in range(3000)]
    path = tmp_path / "mfu.log"
    path.write_text("\n".join(lines) + "\n")
    want = reference(path)
    assert want["perf"]["tflops_per_gpu"]["samples"] == 3000
    assert fast(path, monkeypatch, 64 << 10, parallel) == want
    assert _shape_rows(path.read_bytes()) == 3000


def _percent_log(body: str, n: int) -> str:
    """n lines of `body`, its percents as the server prints them, a `nan` first (SGLang's
    device timer before its first window), stamped, with access lines between."""
    out = []
    for i in range(n):
        pct = "nan" if i == 0 else f"{(i * 37) % 10_001 / 100:.2f}"
        fields = {"r": 8 + i % 5, "t": 100 + i, "u": i % 100, "q": i % 3, "c": i % 700,
                  "g": f"{50 + i % 9:.2f}", "v": f"{i % 977 / 10:.1f}", "p": pct,
                  "p1": f"{i % 1001 / 10:.1f}", "p2": f"{(i * 7) % 10_001 / 100:.2f}"}
        out.append(TS.format(m=i // 60 % 60, s=i % 60) + body.format(**fields))
        if i % 4 == 0:
            out.append(TS.format(m=i // 60 % 60, s=i % 60) + ACCESS.format(t=i))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("body", PERCENT_LINES, ids=["decode-occupancy", "decode-idle",
                                                     "prefill-occupancy", "prefill-0.4.2-hit",
                                                     "vllm"])
def test_a_line_with_percents_is_learned_as_a_shape(body: str) -> None:
    """A stats line whose ratios are printed as percents is a shape: its rows are read
    without the parser, each percent's number read as `to_ratio` reads the percent."""
    text = _percent_log(body, 400)
    block = text.encode()
    reader, got = _read_twice(block)
    assert got == _naive_block(block, 1)
    assert len(reader.shapes) == 1
    assert any(k in ("pct1", "pct2") for k in reader.shapes[0].kinds), reader.shapes[0].kinds
    buf = b"\n" + block
    batch = reader.read(buf, len(buf), 1)
    # all but SGLang's `nan` one (a ratio the converter refuses: the parser's)
    nan = ["{p}" in body]
    assert batch.rows_total == 400 - sum(nan)
    assert [r["line"] for r in batch.others if r["kind"] != "unparsed"] == [1] * sum(nan)


def test_vllm_stats_lines_with_their_own_prefix_are_the_parsers() -> None:
    """vLLM's logger prefix (`INFO 03-01 08:00:00 [loggers.py:116] `) and an engine's head
    (`Engine 000: `) are no shape's: such lines stay with the parser, and read the same."""
    lines = [f"INFO 03-01 08:00:{s:02d} [loggers.py:116] " + head + VLLM.format(
        v=f"{s:.1f}", r=s, q=0, p1=f"{s / 2:.1f}", p2="45.2") for s in range(60)
        for head in ("", "Engine 000: ")]
    block = ("\n".join(lines) + "\n").encode()
    reader, got = _read_twice(block)
    assert got == _naive_block(block, 1) and not reader.shapes


@pytest.mark.parametrize("parallel", [False, True])
def test_percent_lines_read_by_shapes_summarise_and_export_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool) -> None:
    """Decode and prefill lines with percents (and vLLM's stats lines) in one log: the
    summary (its `perf` and hit rates), the export and the replay's records are what parsing
    every line gives."""
    path = tmp_path / "pct.log"
    path.write_text("".join(_percent_log(b, 1500) for b in PERCENT_LINES))
    want = reference(path)
    assert want["perf"]["fwd_occupancy"]["samples"] > 2000
    monkeypatch.setenv("KDASH_PROCESSES", "2")
    assert fast(path, monkeypatch, 64 << 10, parallel) == want
    assert export(path, monkeypatch, 64 << 10, parallel) == naive_export(path)
    assert timeline_records(path, monkeypatch, parallel) == list(logread.Scan(path))
    reader, rows, data, at = BlockReader(PARSER), 0, path.read_bytes(), 0
    while at < len(data):  # blocks of whole lines, as a reading process reads them
        end = data.rfind(b"\n", at, at + (64 << 10)) + 1
        buf = b"\n" + data[at:end]
        rows += reader.read(buf, len(buf), 1).rows_total
        at = end
    # the parser's: the `nan` lines, and a block's lines of a shape it learns on the way
    assert rows > 0.9 * 5 * 1500


def test_a_field_the_grammar_does_not_know_is_skipped_by_the_shape() -> None:
    """A newer server's field (a name the grammar lacks) with a plain value: the line is still
    a shape, its item matched and skipped as the parser skips it; another value there (a
    word, a sign) or another name is the parser's, and reads the same."""
    good = [TS.format(m=1, s=s) + UNKNOWN.format(r=s, t=100 + s, u=5, g="10.00", q=0)
            for s in range(60)]
    odd = [TS.format(m=2, s=s) + UNKNOWN.format(r=s, t=v, u=5, g="10.00", q=0)
           for s, v in enumerate(["-1", "nan", "x", "1,5", "5 reqs", "1e3"])]
    other = TS.format(m=3, s=0) + UNKNOWN.replace("#new-field", "#other-field").format(
        r=1, t=1, u=5, g="1.00", q=0)
    block = ("\n".join([*good, *odd, other, *good]) + "\n").encode()
    reader, got = _read_twice(block)
    assert got == _naive_block(block, 1)
    buf = b"\n" + block
    batch = reader.read(buf, len(buf), 1)
    assert batch.rows_total >= 120 and len(batch.others) <= 7
    assert "new_field" not in got[0] and got[0]["tokens"] == 100


def test_hybrid_pools_read_in_bulk_as_the_parser_reads_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hybrid model's lines name each pool; the record's `tokens` and `token_usage` are the
    full pool's (`#full token`, `full token usage`), the others beside them, read the same in
    bulk as by the parser, whichever pool is fuller."""
    lines = [TS.format(m=1, s=i) + SWA.format(r=20, t=19574, u=(70, 42)[i % 2],
                                              c=(10000, 30000)[i % 2] + i, q=(20, 61)[i % 2],
                                              g="812.50")
             for i in range(40)]
    lines += [TS.format(m=2, s=i) + MAMBA.format(r=20, t=19574, u=42, c=30, q=90, g="812.50")
              for i in range(40)]
    path = tmp_path / "hybrid.log"
    path.write_text("\n".join(lines) + "\n")
    second, last = parse_line(lines[1], 2), parse_line(lines[-1], 80)
    assert second is not None and last is not None
    assert (second["tokens"], second["token_usage"], second["swa_token_usage"]) == (
        19574, 0.42, 0.61)
    assert (last["tokens"], last["token_usage"], last["mamba_usage"]) == (19574, 0.42, 0.90)
    for chunk, parallel in ((300, False), (300, True)):  # blocks read after the first learned
        assert fast(path, monkeypatch, chunk, parallel) == reference(path)
        assert export(path, monkeypatch, chunk, parallel) == naive_export(path)
