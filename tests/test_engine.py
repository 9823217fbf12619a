"""The Collector on real files: observations from a worker, applied to a RunState."""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from dash.core.config import Config
from dash.core.errors import ConfigError
from dash.core.state.run import RunState
from dash.sim.fake_nvml import FakeNvml
from dash.sources import watch
from dash.sources.collector import Collector, apply_files, apply_gpus, apply_processes

DECODE = ("[2025-09-03 18:33:{s:02d} TP0] Decode batch. #running-req: 3, #token: 2740, "
          "token usage: 0.01, cuda graph: True, gen throughput (token/s): {g:.2f}, #queue-req: 0\n")


def _cfg(tmp: Path, **kw: object) -> Config:
    base: dict[str, object] = dict(log=tmp / "server.log", client_log=tmp / "client.log",
                                   outputs=(str(tmp / "out" / "*.jsonl"),), url="")
    base.update(kw)
    return Config(**base)  # type: ignore[arg-type]


def test_read_in_a_thread_apply_on_the_caller(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "B1.jsonl").write_text("{}\n" * 5)
    (tmp_path / "server.log").write_text("".join(DECODE.format(s=i, g=50.0 + i) for i in range(10)))
    (tmp_path / "client.log").write_text("Resuming: 5 already done\n")
    cfg = _cfg(tmp_path, expect={"B1": 20})
    col = Collector(cfg, nvml_module=FakeNvml.scenario())
    state = RunState(cfg)
    box: list[object] = []
    t = threading.Thread(target=lambda: box.append(col.read_files()))
    t.start()
    t.join()
    read = box[0]
    assert len(read.records) == 10 and read.records[0]["kind"] == "decode"  # type: ignore[attr-defined]
    apply_files(state, read, 100.0)  # type: ignore[arg-type]
    apply_gpus(state, col.sample_gpus(), 100.0)
    with open(tmp_path / "out" / "B1.jsonl", "a") as fh:
        fh.write("{}\n" * 3)
    with open(tmp_path / "server.log", "a") as fh:
        fh.write(DECODE.format(s=59, g=99.0))
    apply_files(state, col.read_files(), 160.0)
    snap = state.snapshot(160.0)
    col.close()
    assert snap.server.last_decode["gen_throughput"] == 99.0  # type: ignore[index]
    assert snap.server.peak is not None and snap.server.peak.gen_throughput == 99.0
    (p,) = snap.partitions
    assert (p.name, p.done, p.at_start, p.total, p.status) == ("B1", 8, 5, 20, "running")
    assert snap.client.resuming == 5 and snap.client.log_bytes == 25
    assert snap.gpus.available and snap.gpus.gpus


def test_rotation_of_the_server_log_keeps_every_line(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(DECODE.format(s=1, g=10.0))
    cfg = _cfg(tmp_path, client_log=None, outputs=())
    col = Collector(cfg)
    state = RunState(cfg)
    apply_files(state, col.read_files(), 1.0)
    with open(log, "a") as fh:
        fh.write(DECODE.format(s=2, g=20.0))
    os.replace(log, tmp_path / "server.log.1")
    log.write_text(DECODE.format(s=3, g=30.0))
    read = col.read_files()
    assert read.server is not None and read.server.events == ("rotated", "opened")
    assert [r["gen_throughput"] for r in read.records if r] == [20.0, 30.0]
    apply_files(state, read, 2.0)
    assert state.snapshot(2.0).server.lines == 3
    col.close()


def test_process_listing_is_applied(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, process="no-such-client-process-xyz", outputs=())
    col = Collector(cfg)
    state = RunState(cfg)
    apply_processes(state, col.sample_processes(), 1.0)
    assert state.snapshot(1.0).client.processes == ()


@pytest.mark.parametrize("bad", ["", "out/[ab"])
def test_bad_globs_are_config_errors(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ConfigError):
        Collector(_cfg(tmp_path, outputs=(bad,)))


async def test_watch_wakes_on_a_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The safety tick (2 s) would wake the collector even if inotify never fired: pushed past
    # the test's deadline, only the watch itself can.
    monkeypatch.setattr(watch, "watch_changes",
                        functools.partial(watch.watch_changes, safety_poll_s=3600.0))
    cfg = _cfg(tmp_path)
    log = tmp_path / "server.log"
    log.write_text("")
    col = Collector(cfg)
    stop = asyncio.Event()
    gen = col.watch(stop)
    first = asyncio.ensure_future(gen.__anext__())
    deadline = time.monotonic() + 30
    # Written again every half second: the watch may start after the first write.
    while not first.done() and time.monotonic() < deadline:
        with log.open("a") as fh:
            fh.write("x\n")
        await asyncio.wait([first], timeout=0.5)
    assert first.done(), "no wake-up from the watch"
    stop.set()
    await gen.aclose()
    await col.aclose()


def test_a_stalled_partition_alerts_at_the_configured_time_and_an_idle_one_never(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "B1.jsonl").write_text("{}\n" * 5)
    (out / "B2.jsonl").write_text("{}\n" * 5)
    cfg = _cfg(tmp_path, expect={"B1": 20}, alerts={"stalled_after_s": 60.0})
    col = Collector(cfg)
    state = RunState(cfg)
    fired: dict[str, float] = {}
    try:
        for t in range(0, 200, 10):
            if t == 10:  # both grow once, then the client goes quiet
                for p in (out / "B1.jsonl", out / "B2.jsonl"):
                    with p.open("a") as fh:
                        fh.write("{}\n")
            apply_files(state, col.read_files(), float(t))
            fired.update((a.key, float(t)) for a in state.tick(float(t)).new)
        b1, b2 = state.snapshot(200.0).partitions
        assert (b1.status, b2.status) == ("stalled", "idle")
        assert 70.0 <= fired["output_stalled:B1"] <= 90.0
        assert "output_stalled:B2" not in fired
    finally:
        col.close()


def test_an_output_that_became_a_directory_leaves_the_logs_read(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "B1.jsonl").write_text("{}\n" * 5)
    (out / "B2.jsonl").write_text("{}\n" * 5)
    (tmp_path / "server.log").write_text(DECODE.format(s=1, g=10.0))
    (tmp_path / "client.log").write_text("")
    col = Collector(_cfg(tmp_path))
    try:
        col.read_files()
        (out / "B1.jsonl").unlink()
        (out / "B1.jsonl").mkdir()
        with open(tmp_path / "server.log", "a") as fh:
            fh.write(DECODE.format(s=2, g=20.0))
        with open(tmp_path / "client.log", "a") as fh:
            fh.write("Resuming: 5 already done\n")
        with open(out / "B2.jsonl", "a") as fh:
            fh.write("{}\n")
        read = col.read_files()
        assert len(read.errors) == 1 and read.errors[0].startswith(str(out / "B1.jsonl"))
        state = RunState(_cfg(tmp_path))
        apply_files(state, read, 1.0)
        apply_files(state, read, 2.0)
        assert state.snapshot(2.0).notices == read.errors  # said once, not once a poll
        assert [r["gen_throughput"] for r in read.records if r] == [20.0]
        assert read.client is not None and read.client.lines == ("Resuming: 5 already done",)
        assert [(c.name, c.lines) for c in read.outputs] == [("B1", None), ("B2", 6)]
        with open(tmp_path / "server.log", "a") as fh:
            fh.write(DECODE.format(s=3, g=30.0))
        assert [r["gen_throughput"] for r in col.read_files().records if r] == [30.0]
    finally:
        col.close()


def _wc_l(path: Path) -> int:
    return int(subprocess.run(["wc", "-l"], stdin=path.open("rb"), capture_output=True,
                              check=True).stdout.split()[0])


def test_an_output_rewritten_larger_between_two_reads_counts_what_wc_l_says(
        tmp_path: Path) -> None:
    """23 long lines, then the client truncates the file and writes 60 shorter ones (more bytes
    in all) before the next read: the count is 60, not 23 plus the newlines past the old
    offset."""
    out = tmp_path / "out"
    out.mkdir()
    part = out / "B1.jsonl"
    part.write_text("".join(f'{{"id": {i}, "response": "{"t" * 20}"}}\n' for i in range(23)))
    before = part.stat().st_size
    cfg = _cfg(tmp_path, log=None, client_log=None, expect={"B1": 100})
    col = Collector(cfg)
    state = RunState(cfg)
    try:
        apply_files(state, col.read_files(), 1.0)
        assert state.snapshot(1.0).partitions[0].done == 23
        with open(part, "r+") as fh:
            fh.truncate(0)
            fh.write("".join(f'{{"id": {i}, "r": 1}}\n' for i in range(60)))
        assert part.stat().st_size > before
        apply_files(state, col.read_files(), 2.0)
        assert state.snapshot(2.0).partitions[0].done == _wc_l(part) == 60
    finally:
        col.close()


@pytest.mark.parametrize("grow", [0, 5000])
def test_a_server_log_rewritten_to_its_old_size_or_larger_is_read_again(
        tmp_path: Path, grow: int) -> None:
    """A restarted server truncates its log and writes at least as much before the next read:
    every decode line ends in the same bytes, yet each new line is read, once."""
    log = tmp_path / "server.log"
    old = "".join(DECODE.format(s=i % 60, g=100.0 + i % 7) for i in range(250))
    log.write_text(old)
    cfg = _cfg(tmp_path, client_log=None, outputs=())
    col = Collector(cfg)
    try:
        first = col.read_files()
        assert len([r for r in first.records if r]) == 250
        new = [DECODE.format(s=(i + 30) % 60, g=200.0 + i % 5) for i in range(250 + grow // 100)]
        with open(log, "r+") as fh:
            fh.truncate(0)
            fh.write("".join(new)[:len(old) + grow])
        assert log.stat().st_size == len(old) + grow
        read = col.read_files()
        assert read.server is not None and read.server.events == ("truncated",)
        got = [r["gen_throughput"] for r in read.records if r]
        assert got == [200.0 + i % 5 for i in range(_wc_l(log))]
    finally:
        col.close()
