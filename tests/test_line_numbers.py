"""Live records and alert evidence name the line's number in the file, as `grep -n` does,
also for a log longer than the backfill window (its first lines are counted in the background)."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

from dash.commands.once import run_once
from dash.core.config import Config
from dash.core.state.run import RunState
from dash.sources.collector import Collector, apply_files

DECODE = ("[2025-09-03 18:{m:02d}:{s:02d} TP0] Decode batch. #running-req: 3, #token: 2740, "
          "token usage: 0.01, cuda graph: True, gen throughput (token/s): {g:.2f}, #queue-req: 0\n")
OOM = ("[2025-09-03 19:59:59 TP0] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
       "4.00 GiB. GPU 3 has a total capacity of 79.19 GiB of which 1.06 GiB is free.\n")


def _big_log(path: Path, mb: int = 6) -> None:
    """`mb` MB of decode lines (more than the 4 MB backfill), an OOM, then a few more lines."""
    with path.open("w") as fh:
        i = 0
        while fh.tell() < mb << 20:
            fh.write(DECODE.format(m=i // 60 % 60, s=i % 60, g=100.0 + i % 50))
            i += 1
        fh.write(OOM)
        for j in range(20):
            fh.write(DECODE.format(m=59, s=j, g=42.0))


def _grep_n(path: Path, text: str) -> int:
    out = subprocess.run(["grep", "-n", "-F", text.strip(), str(path)], capture_output=True,
                         text=True, check=True).stdout
    return int(out.split(":", 1)[0])


def test_a_live_alert_names_the_line_grep_n_finds_in_a_log_larger_than_the_backfill(
        tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    _big_log(log)
    want = _grep_n(log, OOM)
    cfg = Config(log=log, url="")
    assert log.stat().st_size > cfg.backfill_bytes
    col = Collector(cfg)
    state = RunState(cfg)
    try:
        reads = [col.read_files()]  # the backfill may take more than one read
        while reads[-1].more:
            reads.append(col.read_files())
        for read in reads:
            apply_files(state, read, 100.0)
        (oom,) = [a for a in state.tick(100.0).new if a.id == "server_oom"]
        # Fired at once, before or after the count: either honest about it, or right.
        assert "(line ?, counting)" in oom.evidence or f"(line {want})" in oom.evidence
        assert reads[0].records[-1] is not None and reads[0].records[-1]["line"] is None
        assert col.wait_counts(timeout=30)
        reads.append(col.read_files())
        windows = [r.window for r in reads if r.window is not None]
        assert len(windows) == 1 and windows[0].base is not None
        apply_files(state, reads[-1], 101.0)
        state.tick(101.0)
        snap = state.snapshot(101.0)
        (alert,) = [a for a in snap.alerts if a.id == "server_oom"]
        assert f"(line {want})" in alert.evidence
        assert [e["line"] for e in snap.server.events if e["event"] == "oom"] == [want]
        last = snap.server.last_decode
        assert last is not None and last["line"] == want + 20
        with log.open("a") as fh:
            fh.write(DECODE.format(m=59, s=30, g=7.0))
        apply_files(state, col.read_files(), 102.0)
        last = state.snapshot(102.0).server.last_decode
        assert last is not None and last["line"] == want + 21 == _grep_n(log, "(token/s): 7.00")
    finally:
        col.close()


def test_once_json_waits_for_the_count_and_prints_true_numbers(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    _big_log(log)
    out = io.StringIO()
    assert run_once(Config(log=log, url=""), as_json=True, out=out) == 0
    doc = json.loads(out.getvalue())
    want = _grep_n(log, OOM)
    assert doc["server"]["last_decode"]["line"] == want + 20
    assert [e["line"] for e in doc["server"]["events"] if e["event"] == "oom"] == [want]
    (oom,) = [a for a in doc["alerts"] if a["id"] == "server_oom"]
    assert f"(line {want})" in oom["evidence"]


def test_after_a_rotation_the_old_file_keeps_its_numbers_and_the_new_starts_at_one(
        tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(DECODE.format(m=0, s=1, g=10.0))
    col = Collector(Config(log=log, url=""))
    try:
        assert [r["line"] for r in col.read_files().records if r] == [1]
        with log.open("a") as fh:
            fh.write(DECODE.format(m=0, s=2, g=20.0) + DECODE.format(m=0, s=3, g=30.0))
        os.replace(log, tmp_path / "server.log.1")
        log.write_text(DECODE.format(m=0, s=4, g=40.0))
        read = col.read_files()
        assert read.server is not None and read.server.events == ("rotated", "opened")
        assert [(r["gen_throughput"], r["line"]) for r in read.records if r] == [
            (20.0, 2), (30.0, 3), (40.0, 1)]
        with log.open("r+") as fh:  # truncated and rewritten: numbered from 1 again
            fh.truncate(0)
            fh.write(DECODE.format(m=0, s=5, g=50.0) * 3)
        assert [r["line"] for r in col.read_files().records if r] == [1, 2, 3]
    finally:
        col.close()
