"""`kdash summary` and `kdash export`: the streaming reader, the documents, the CLI errors."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dash.commands import summary as report
from dash.commands.summary import summarize
from dash.core.log.parse import Record, parse_line
from dash.sources import logread
from dash.sources.logread import Scan

ACCESS = '[2026-03-01 08:01:00] INFO:     127.0.0.1:55742 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
DECODE = ("[2026-03-01 08:01:0{s}] Decode batch, #running-req: 8, #token: 100, token usage: 0.{u}, "
          "cuda graph: True, gen throughput (token/s): {g}, #queue-req: 0")
PREFILL = ("[2026-03-01 08:01:00] Prefill batch, #new-seq: 1, #new-token: 300, #cached-token: 100, "
           "token usage: 0.10, #running-req: 0, #queue-req: 0")


def _naive(path: Path) -> list[Record]:
    data = path.read_bytes().decode("utf-8", "replace")
    out = []
    for n, line in enumerate(data.split("\n"), 1):
        rec = parse_line(line, n)
        if rec is not None:
            out.append(rec)
    return out


def _mixed_log(tmp_path: Path) -> Path:
    lines = ["", "\r", ACCESS, "(APIServer pid=1) INFO:     127.0.0.1:39830 - \"GET /health HTTP/1.1\" 200 OK",
             DECODE.format(s=1, u=10, g="100.00"), ACCESS, ACCESS, PREFILL, "random noise",
             DECODE.format(s=2, u=20, g="300.50"), "[2026-03-01 08:01:03] Decode batch, garbage",
             "[2026-03-01 08:01:04] KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: 0.4000 -> 0.5322",
             ACCESS, DECODE.format(s=5, u=30, g="200.00"), "Killed"]
    path = tmp_path / "server.log"
    path.write_text("\n".join(lines * 3))  # no newline at the end: the last line still counts
    return path


@pytest.mark.parametrize("chunk", [7, 64, 4 << 20])
def test_reader_matches_line_by_line_parsing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(logread, "CHUNK", chunk)
    path = _mixed_log(tmp_path)
    scan = Scan(path)
    got = list(scan)
    assert got == _naive(path)
    assert scan.lines == path.read_bytes().count(b"\n") + 1
    assert [r["kind"] for r in got[:5]] == ["decode", "prefill", "decode", "unparsed", "event"]


def test_reader_matches_on_every_real_log(real_logs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logread, "CHUNK", 100)
    for path in sorted(real_logs.glob("*.log")):
        assert list(Scan(path)) == _naive(path), path.name


def test_summary_document(tmp_path: Path) -> None:
    doc = summarize(_mixed_log(tmp_path))
    assert doc["engine"] == "sglang"
    assert doc["lines"] == 45
    assert doc["records"] == {"decode": 9, "prefill": 3, "event": 6, "unparsed": 3}
    assert doc["gen_throughput"]["peak"] == {"gen_throughput": 300.5, "ts": "2026-03-01T08:01:02", "line": 10}
    assert doc["gen_throughput"]["mean"] == 200.17
    assert doc["last_decode"]["line"] == 44 and doc["last_decode"]["token_usage"] == 0.3
    assert doc["prefill"]["cache_hit_ratio"] == 0.25
    assert doc["event_counts"] == {"retract": 3, "crash": 3}
    assert doc["unparsed"] == 3 and doc["unparsed_samples"][0].endswith("Decode batch, garbage")
    assert doc["first_ts"] == "2026-03-01T08:01:01"
    assert [a["id"] for a in doc["alerts"]] == ["server_crash"]
    text = report.render_text(doc)
    assert "peak 300.50" in text and "retract 3" in text and "\x1b[" not in text


def test_gzip_log_reads_the_same(tmp_path: Path) -> None:
    path = _mixed_log(tmp_path)
    gz = tmp_path / "server.log.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert list(Scan(gz)) == list(Scan(path))


def test_overlong_line_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    path.write_bytes(b"x" * (3 << 20) + b" Traceback\n" + DECODE.format(s=1, u=1, g="5.00").encode() + b"\n")
    recs = list(Scan(path))
    assert [(r["kind"], r["line"]) for r in recs] == [("decode", 2)]


def _kdash(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dash", *args], capture_output=True, text=True,
                          timeout=120, check=False)


def test_cli_summary_json_and_text(real_logs: Path) -> None:
    log = real_logs / "sglang-3909-decode-throughput-decrease.log"
    res = _kdash("summary", str(log), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["records"]["decode"] == 9 and doc["alerts"] == []
    assert doc["gen_throughput"]["peak"]["gen_throughput"] == 186.99
    text = _kdash("summary", str(log))
    assert text.returncode == 0 and "decode 9" in text.stdout and "┤" in text.stdout


def test_cli_export_formats(real_logs: Path) -> None:
    log = real_logs / "sglang-10053-decode-cuda-graph-trailing-space.log"
    res = _kdash("export", str(log))
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert rows == _naive(log)
    res = _kdash("export", str(log), "--format", "csv")
    table = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [r["kind"] for r in table] == [r["kind"] for r in rows]
    assert table[1]["gen_throughput"] == "1.06" and json.loads(table[1]["extra"]) == {"cuda_graph": True}


@pytest.mark.parametrize("args", [("summary", "/no/such/log"), ("export", "/no/such/log"),
                                  ("summary", "."), ("export", "x.log", "--format", "xml"),
                                  ("summary",)])
def test_cli_errors_are_one_line(args: tuple[str, ...]) -> None:
    res = _kdash(*args)
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.startswith("kdash: ") and res.stderr.count("\n") == 1
    assert "Traceback" not in res.stderr


def test_export_leaves_out_unparsed_lines_that_summary_counts(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-03-01 12:00:05] Decode batch, #running-req: 32, #token: 41230, token usage: 0.09, "
        "cuda graph: True, gen throughput (token/s): 2327.27, #queue-req: 0\n"
        "[2026-03-01 12:00:06] Decode batch, #running-req: lots, gen throughput (token/s): ?\n")
    rows = [json.loads(line) for line in _kdash("export", str(log)).stdout.splitlines()]
    assert [r["kind"] for r in rows] == ["decode"]
    doc = json.loads(_kdash("summary", str(log), "--json").stdout)
    assert doc["records"]["unparsed"] == 1 and doc["unparsed"] == 1


@pytest.mark.parametrize(("env", "want"), [
    ("1", 1), ("3", 3), ("0", 1), ("-2", 1), ("64", logread.MAX_PROCESSES), ("many", None),
])
def test_processes_follow_the_environment_within_bounds(
        monkeypatch: pytest.MonkeyPatch, env: str, want: int | None) -> None:
    monkeypatch.setenv("KDASH_PROCESSES", env)
    monkeypatch.setattr(logread.os, "sched_getaffinity", lambda _pid: {0, 1, 2}, raising=False)
    assert logread.processes() == (3 if want is None else want)  # garbage: one per core
    monkeypatch.delenv("KDASH_PROCESSES")
    assert logread.processes() == 3


def _decode_every_10s(hours: float, gap: tuple[float, float] | None = None) -> str:
    """A long run of decode lines, 10 s apart, with 200 requests running, none within `gap`;
    and a retraction every 7 minutes (too few for an alert of its own)."""
    t0 = 1_772_000_000
    out = []
    for i in range(int(hours * 360)):
        t = t0 + 10 * i
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
        if i % 42 == 21:
            out.append(f"[{stamp}] KV cache pool is full. Retract requests. #retracted_reqs: 1, "
                       f"#new_token_ratio: 0.4000 -> 0.5000")
        if gap and gap[0] <= t - t0 < gap[1]:
            continue
        out.append(f"[{stamp}] Decode batch, #running-req: 200, #token: 9000, token usage: 0.50, "
                   f"cuda graph: True, gen throughput (token/s): 1000.00, #queue-req: 0")
    return "\n".join(out) + "\n"


def test_a_long_log_thinned_for_its_alerts_is_not_reported_silent(tmp_path: Path) -> None:
    """70 h of decode lines are replayed one every 320 s, with other lines in between: that
    gap is not a silent server."""
    log = tmp_path / "long.log"
    log.write_text(_decode_every_10s(70), encoding="utf-8")
    doc = summarize(log)
    assert doc["records"]["decode"] == 70 * 360
    assert [a["id"] for a in doc["alerts"]] == []


def test_a_real_silence_in_a_long_log_is_still_reported(tmp_path: Path) -> None:
    """An hour without stats lines (the replay sees a silence when other lines arrive in it)."""
    log = tmp_path / "long.log"
    log.write_text(_decode_every_10s(70, gap=(30 * 3600, 31 * 3600)), encoding="utf-8")
    alerts = summarize(log)["alerts"]
    assert [a["id"] for a in alerts] == ["server_silent"]
    assert "the last one had 200 running" in alerts[0]["message"]


def test_the_text_report_wraps_alert_messages_instead_of_cutting_them() -> None:
    message = ("fell from peak 1313 to plateau 605 tok/s (-54%) over 7 min; likely KV-bound "
               "(the KV cache is full and requests queue)")
    alerts = [{"severity": "warn", "id": "throughput_plateau", "message": message,
               "line": "x" * 300}]
    lines = report._alert_lines(alerts, 70)
    assert all(len(line) <= 70 for line in lines)
    words = " ".join(line.strip() for line in lines[1:-1]).split()
    assert " ".join(words[2:]) == message  # every word, in order, after severity and rule id
    assert lines[-1].endswith("…")  # the log line is cut, and says so
