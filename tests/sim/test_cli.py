"""`kdash sim` as a real subprocess, and `kdash demo`'s wiring to the dashboard."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
import types
import urllib.request
from pathlib import Path

import pytest

from dash.commands.cli import main


def _start_sim(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "dash", "sim", "--dir", str(tmp_path / "run"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = [proc.stdout.readline() for _ in range(3)]
    return proc, lines


def _watch_line(lines: list[str]) -> str:
    at = next(i for i, line in enumerate(lines) if line.rstrip().endswith("Watch it with:"))
    return lines[at + 1].strip()


def _watch_argv(lines: list[str]) -> list[str]:
    """The printed command's options (after the program, `python -m dash` in these tests)."""
    argv = shlex.split(_watch_line(lines))
    return argv[argv.index("--log"):]


def test_sim_prints_the_watch_command_and_stops_on_sigterm(tmp_path):
    proc, lines = _start_sim(tmp_path, "--speed", "50")
    try:
        argv = _watch_argv(lines)
        opts = dict(zip(argv[::2], argv[1::2], strict=True))
        assert set(opts) == {"--log", "--outputs", "--inputs", "--client-log", "--url"}
        assert "NVML" in "".join(lines)
        deadline = time.monotonic() + 10
        while "ready to roll" not in Path(opts["--log"]).read_text():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        with urllib.request.urlopen(opts["--url"] + "/health", timeout=3) as resp:
            assert resp.status == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 128 + signal.SIGTERM  # 143, as a shell expects
    finally:
        proc.kill()
        proc.wait()


def test_the_printed_command_runs_as_printed_from_anywhere(tmp_path):
    proc, lines = _start_sim(tmp_path, "--speed", "50")
    try:
        line = _watch_line(lines)
        assert shlex.split(line)[:3] == [sys.executable, "-m", "dash"]  # this very kdash
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        out = subprocess.run(f"{line} --once --json --window 0", shell=True, cwd=elsewhere,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["server"]["path"].startswith(str(tmp_path))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)


def test_watch_command_names_the_running_kdash_script(monkeypatch, tmp_path):
    from dash.commands.sim import kdash_command

    script = tmp_path / "my env" / "bin" / "kdash"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "argv", [str(script), "sim"])
    assert shlex.split(kdash_command()) == [str(script)]  # quoted: the path has a space


def test_sim_ends_at_duration(tmp_path):
    proc, _ = _start_sim(tmp_path, "--speed", "200", "--duration", "40", "--log-format", "0.4.3")
    assert proc.wait(timeout=20) == 0
    text = (tmp_path / "run" / "server.log").read_text()
    assert "Decode batch. " in text and " TP0] " in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--speed", "0"], "--speed must be a positive number"),
        (["--speed", "inf"], "--speed must be a positive number"),  # would spin for ever
        (["--speed", "nan"], "--speed must be a positive number"),
        (["--port", "99999"], "--port must be 0-65535"),
        (["--gpus", "100000"], "--gpus must be from 1 to 64"),
        (["--duration", "-1"], "--duration must be a positive number"),
    ],
)
def test_sim_rejects_bad_options(capsys, args, message):
    assert main(["sim", "--dir", "/nonexistent-never", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kdash: ") and message in err and err.count("\n") == 1


def test_sim_needs_a_dir_it_can_write(capsys, tmp_path):
    assert main(["sim"]) == 2  # --dir is required
    capsys.readouterr()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["sim", "--dir", str(blocker / "run"), "--duration", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kdash: sim: cannot write the run in ") and err.count("\n") == 1


def test_once_json_reads_the_simulated_run(tmp_path):
    proc, lines = _start_sim(tmp_path, "--speed", "50")
    try:
        argv = _watch_argv(lines)
        deadline = time.monotonic() + 60
        while True:  # until the run is ready, decoding, and its outputs are growing
            out = subprocess.run([sys.executable, "-m", "dash", *argv, "--once", "--json"],
                                 capture_output=True, text=True, timeout=60)
            doc = json.loads(out.stdout)
            parts = {p["name"]: p for p in doc["partitions"]}
            b2 = parts.get("B2_opencodeinstruct", {})
            if (doc["server"]["last_decode"] or {}).get("gen_throughput", 0) > 1000 \
                    and b2.get("done", 0) > 1374:
                break
            assert time.monotonic() < deadline, doc
            time.sleep(0.5)
        assert b2["total"] == 5000
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)


def test_demo_runs_the_dashboard_on_the_sim_and_cleans_up(monkeypatch):
    seen: dict[str, object] = {}

    def run_dashboard(cfg, *, nvml_module=None, clock=None, extra_title=None, notices=()):
        deadline = time.monotonic() + 10
        while "ready to roll" not in cfg.log.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with urllib.request.urlopen(cfg.url + "/server_info", timeout=3) as resp:
            seen["info"] = json.loads(resp.read())
        nvml_module.nvmlInit()
        seen.update(cfg=cfg, title=extra_title, gpus=nvml_module.nvmlDeviceGetCount(),
                    clock_ahead=clock.now() - time.time())
        return 0

    fake_app = types.ModuleType("dash.ui.app")
    fake_app.run_dashboard = run_dashboard  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dash.ui.app", fake_app)
    assert main(["demo", "--scenario", "peak-plateau", "--speed", "100", "--gpus", "2"]) == 0
    cfg = seen["cfg"]
    assert seen["title"] == "demo: peak-plateau" and seen["gpus"] == 2
    assert seen["info"]["max_total_num_tokens"] > 0
    assert seen["clock_ahead"] > 10  # the demo's clock runs at the simulation's speed
    assert not cfg.log.parent.exists()  # the temp dir is gone
    assert cfg.state_dir == cfg.log.parent / "kdash-state"  # the demo's history: its own
