"""The summary's fast path gives exactly what parsing every line gives, on every log shape."""

from __future__ import annotations

import gzip
import importlib.util
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dash.commands import summary as report
from dash.core.views import fastscan
from dash.core.views.fastscan import scan_block
from dash.core.views.summary import Stamps, summarize_records
from dash.core.views.summary_feed import AlertFeed, Candidate
from dash.sources import logread

REPO = Path(__file__).resolve().parents[2]
TS = "[2026-03-01 08:{m:02d}:{s:02d}] "
DECODE = ("Decode batch, #running-req: {r}, #token: {t}, token usage: 0.{u:02d}, cuda graph: True, "
          "gen throughput (token/s): {g}, #queue-req: {q}")
PREFILL = ("Prefill batch, #new-seq: {r}, #new-token: {t}, #cached-token: {c}, token usage: 0.{u:02d}, "
           "#running-req: {r}, #queue-req: {q}")
ACCESS = 'INFO:     127.0.0.1:{t} - "POST /v1/chat/completions HTTP/1.1" 200 OK'


@pytest.fixture(autouse=True, params=["c", "re"])
def line_scanner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs with the C line scanner and with its `re` fallback."""
    if request.param == "re":
        monkeypatch.setattr(fastscan, "scanner", None)
    elif fastscan.scanner is None:
        pytest.skip("the C line scanner is not built in this install")
    return str(request.param)


def reference(path: Path) -> dict[str, Any]:
    """The summary built from every record, one at a time."""
    scan = logread.Scan(path)
    records = list(scan)
    return report.document(path, summarize_records(records, logread.ref_time(path), scan.lines))


def fast(path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, parallel: bool) -> dict[str, Any]:
    monkeypatch.setattr(logread, "CHUNK", chunk)
    monkeypatch.setattr(logread, "PARALLEL_MIN", 0 if parallel else 1 << 60)
    monkeypatch.setattr(logread, "SEGMENT", 300_000)  # several rounds on a small log
    monkeypatch.setattr(logread, "PIECE", 40_000)  # and several pieces in each
    return report.summarize(path)


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_parse", REPO / "bench" / "parse.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- equivalence on real and generated logs ----------------------------------------------------

@pytest.mark.parametrize("chunk", [300, 4 << 20])
def test_every_real_log(real_logs: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    for path in sorted(real_logs.glob("*.log")):
        assert fast(path, monkeypatch, chunk, parallel=False) == reference(path), path.name


@pytest.mark.parametrize(("parallel", "processes"), [(False, "1"), (True, "2"), (True, "5")])
def test_bench_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool,
                   processes: str) -> None:
    path = tmp_path / "mixed.log"
    _bench().generate(path, 1)
    want = reference(path)
    monkeypatch.setenv("KDASH_PROCESSES", processes)
    got = fast(path, monkeypatch, 64 << 10, parallel)
    assert got == want
    assert want["records"]["decode"] > 500 and want["records"]["prefill"] > 1500
    assert want["lines"] == path.read_bytes().count(b"\n")
    assert _scan(path.read_bytes()) is not None  # the fast path read it all


def test_gzip_log_summarises_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "mixed.log"
    _bench().generate(path, 1)
    gz = tmp_path / "mixed.log.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    plain, packed = fast(path, monkeypatch, 1 << 20, True), fast(gz, monkeypatch, 1 << 20, True)
    assert {**packed, "path": str(path)} == plain


@pytest.mark.parametrize("fmt", ["0.5.12", "0.4.10", "0.4.3"])
@pytest.mark.parametrize("scenario", ["healthy", "oom-crash-restart"])
def test_simulated_formats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str,
                           scenario: str) -> None:
    from dash.sim import run as sim_run
    sim = sim_run.SimRun(tmp_path, scenario, log_format=fmt, start_epoch=1_750_000_000.0)
    sim.advance_to(1800.0)
    want = reference(sim.server_log)
    assert want["records"]["decode"] > 0
    assert _scan(sim.server_log.read_bytes()) is not None
    assert fast(sim.server_log, monkeypatch, 4096, parallel=False) == want
    assert fast(sim.server_log, monkeypatch, 1 << 20, parallel=True) == want


# -- hypothesis: mixed lines, near misses included ---------------------------------------------

_num = st.integers(0, 99_999)
_gen = st.one_of(st.floats(0, 99_999, allow_nan=False).map(lambda f: f"{f:.2f}"),
                 st.sampled_from(["nan", "1e3", "-5.00", "12", "7.5x", ""]))


_CLEAN = [
    DECODE, DECODE, DECODE, DECODE + ", ", DECODE.replace(", cuda graph: True", ""),
    DECODE.replace("batch,", "batch."), DECODE + ", Decode batch", DECODE.replace("#token", "#full token"),
    DECODE.replace("cuda graph: True", "gen throughput (token/s): {u}"),
    DECODE.replace("cuda graph", "accept len: 2.1, cuda graph"), DECODE.replace(": {g}", ": {g}x"),
    PREFILL, PREFILL, PREFILL, PREFILL + ", Decode batch, x", PREFILL.replace("{c}", "{g}"),
    PREFILL.replace("batch,", "batch."), PREFILL.replace("{c}, ", "{c}"),
    ACCESS, ACCESS, ACCESS, ACCESS.replace("POST", "GET /error"), ACCESS.replace("{t}", "x"),
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
    m, s = draw(st.integers(0, 59)), draw(st.integers(0, 59))
    f = {"r": draw(_num), "t": draw(_num), "u": draw(st.integers(0, 99)), "q": draw(_num),
         "g": draw(_gen), "c": draw(_num)}
    prefix = draw(st.sampled_from([TS.format(m=m, s=s), TS.format(m=m, s=s), "",
                                   f"[08:{m:02d}:{s:02d} TP0] ", "(APIServer pid=1) ",
                                   f"[2026-03-01 08:{m:02d}:{s:02d} DP1 TP3] ",
                                   # stamp-wide brackets that are not stamps
                                   f"[2026-03-01T08:{m:02d}:{s:02d}] ", "[a]bcdefghijklmnopqr] "]))
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


# -- the block scanner on its own --------------------------------------------------------------

def _scan(block: bytes, first_line: int = 1) -> Any:
    return scan_block(bytearray(b"\n" + block + b"unread"), len(block) + 1, first_line)


def _dec(s: int, g: str = "10.00") -> bytes:
    return (TS.format(m=1, s=s) + DECODE.format(r=1, t=2, u=3, g=g, q=0)).encode()


def test_strict_lines_give_numbers_and_line_numbers() -> None:
    pre = (TS.format(m=1, s=0) + PREFILL.format(r=1, t=300, c=100, u=5, q=0)).encode()
    acc = (TS.format(m=1, s=0) + ACCESS.format(t=5)).encode()
    block = b"\n".join([acc, _dec(1, "5.00"), pre, acc, _dec(1, "9.50"), _dec(1, "9.50"),
                        b"Killed", _dec(12, "1.00")]) + b"\n"
    part = _scan(block, 101)
    assert part is not None
    assert part.lines == 8 and part.gens == [5.0, 9.5, 9.5, 1.0]
    assert (part.new, part.cached) == (300, 100)
    assert part.peak == (1, 105)  # the first of the two equal maxima
    assert part.last_decode is not None and part.last_decode["line"] == 108
    assert [c.line for c in part.candidates] == [102, 108]  # one per 10 s
    assert [(e["event"], e["line"]) for e in part.events] == [("crash", 107)]
    assert part.first_ts == "2026-03-01T08:01:01" and part.last_ts == "2026-03-01T08:01:12"


@pytest.mark.parametrize("new", ["300", "9007199254740993", "1" * 40])
def test_prefill_sums_are_exact_for_any_size_of_number(new: str) -> None:
    lines = [(TS.format(m=1, s=0) + PREFILL.format(r=1, t=t, c=c, u=5, q=0)).encode()
             for t, c in ((new, 7), (1, new))]
    part = _scan(b"\n".join(lines) + b"\n")
    assert part is not None and part.new == int(new) + 1 and part.cached == int(new) + 7


def test_decode_stamps_are_kept_as_one_bytes_object_that_acts_as_a_list() -> None:
    part = _scan(b"\n".join([_dec(1), _dec(12, "3.00"), _dec(25)]) + b"\n")
    assert part is not None
    stamps = part.gen_ts
    assert isinstance(stamps, Stamps) and len(stamps) == 3
    assert stamps[0] == b"2026-03-01 08:01:01" and stamps[-1] == b"2026-03-01 08:01:25"
    assert stamps[1:] == [b"2026-03-01 08:01:12", b"2026-03-01 08:01:25"]
    with pytest.raises(IndexError):
        stamps[3]
    assert list(pickle.loads(pickle.dumps(stamps))) == list(stamps)


def test_equal_lines_are_told_apart_by_position() -> None:
    acc = (TS.format(m=1, s=0) + ACCESS.format(t=5)).encode()
    block = b"\n".join([_dec(1), acc, _dec(1), b"Killed", _dec(1), _dec(1)]) + b"\n"
    part = _scan(block)
    assert part is not None and part.peak == (0, 1)
    assert part.last_decode is not None and part.last_decode["line"] == 6
    assert [e["line"] for e in part.events] == [4]


@pytest.mark.parametrize("bad", [
    b"\r", b"\x1b[0m", b" ^[[0m",
    b"\n" + (TS.format(m=1, s=0) + PREFILL.format(r=1, t=3, c=1, u=5, q=0) + ", Decode batch").encode(),
    b"\nAvg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 3 reqs",
])
def test_blocks_the_parser_would_read_differently_are_refused(bad: bytes) -> None:
    assert _scan(_dec(1) + bad + b"\n") is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from([_dec(1), _dec(15, "3.00")])),
                max_size=30))
def test_garbage_never_raises(pieces: list[bytes]) -> None:
    block = b"\n".join(pieces) + b"\n"
    part = _scan(block)
    assert part is None or part.lines == block.count(b"\n")


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
