"""What a new user saw wrong on real shapes of logs, end to end through the CLI: each test is
one class of log (no stamps, a few seconds of lines, ...) and what every command must say."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from dash.commands.cli import main
from dash.core.log import timestamps

NO_STAMP = ("Decode batch. #running-req: 1010, #token: 55006, token usage: 0.93, "
            "gen throughput (token/s): 1397.13, #queue-req: 12279\n")


def _once(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["--once", "--json", "--no-http", "--window", "0", *args]) in (0, 1, 2)
    return json.loads(capsys.readouterr().out)


def _aged(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_log_without_stamps_is_as_old_as_its_last_write(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A log whose lines carry no stamp (an old SGLang, a custom format) was written at its
    mtime at the latest: read 40 minutes later it is quiet, not `server running (log live)`,
    and its crash is 40 minutes old, not a crash of this second."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "server.log"
    log.write_text(NO_STAMP)
    _aged(log, 2400)
    doc = _once(capsys, "--log", str(log))
    live = doc["server"]["liveness"]
    assert live["log"] == "quiet" and live["log_age_s"] == pytest.approx(2400, abs=60)
    assert [a["id"] for a in doc["alerts"]] == ["server_silent"]

    crash = tmp_path / "crash.log"
    crash.write_text("Traceback (most recent call last):\n"
                     "RuntimeError: CUDA error: out of memory\n")
    _aged(crash, 2400)
    doc = _once(capsys, "--log", str(crash))
    oom = next(a for a in doc["alerts"] if a["id"] == "server_oom")
    assert time.time() - oom["since"] == pytest.approx(2400, abs=60)


def _decode(t: float, gen: float, running: int = 2) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
    return (f"[{stamp} TP0] Decode batch. #running-req: {running}, #token: 4078, token usage: "
            f"0.00, gen throughput (token/s): {gen:.2f}, #queue-req: 0\n")


def _fall(path: Path, end: float, seconds: float, every: float = 0.25) -> None:
    """Decode lines at 450 tok/s, then 240 tok/s, over `seconds` ending at `end` (a 47% fall,
    the way a request finishing halves a batch of two)."""
    n = int(seconds / every)
    path.write_text("".join(_decode(end - seconds + i * every, 450.0 if i < n // 3 else 240.0)
                            for i in range(n + 1)))
    os.utime(path, (end, end))


@pytest.mark.parametrize("age", [0.0, 2400.0])
def test_a_fall_over_seconds_of_lines_is_no_plateau_for_check_or_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        age: float) -> None:
    """`check` and `--once` fire what holds without waiting, but a plateau is a fall that
    stayed: seconds of lines (a live log, or one read 40 minutes later) show none, as `summary`
    on the same file says."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "server.log"
    _fall(log, time.time() - age, seconds=3.0)
    doc = _once(capsys, "--log", str(log))
    assert "throughput_plateau" not in [a["id"] for a in doc["alerts"]]
    assert main(["check", "--no-http", "--window", "0", "--log", str(log)]) in (0, 1)
    assert "throughput_plateau" not in capsys.readouterr().out
    assert main(["summary", "--json", str(log)]) == 0
    assert "throughput_plateau" not in capsys.readouterr().out


def test_a_plateau_the_lines_show_for_its_hold_is_reported_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "server.log"
    _fall(log, time.time(), seconds=1500.0, every=2.0)
    doc = _once(capsys, "--log", str(log))
    plateau = next(a for a in doc["alerts"] if a["id"] == "throughput_plateau")
    assert "fell from peak 450 to plateau 240 tok/s" in plateau["message"]


def _vllm(t: float, msg: str, level: str = "INFO", src: str = "loggers.py:127") -> str:
    return f"(APIServer pid=4021) {level} {time.strftime('%m-%d %H:%M:%S', time.localtime(t))} [{src}] {msg}\n"


def _vllm_stats(t: float) -> str:
    return _vllm(t, "Engine 000: Avg prompt throughput: 300.0 tokens/s, Avg generation throughput: "
                    "900.0 tokens/s, Running: 40 reqs, Waiting: 2 reqs, GPU KV cache usage: 30.0%, "
                    "Prefix cache hit rate: 41.0%")


def test_an_oom_whose_traceback_line_has_no_stamp_is_an_oom_in_every_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's engine dies with a stamped `EngineCore encountered a fatal error`, then the
    traceback whose last line, unstamped, names the OOM; the server is started again. Read
    minutes later, `--once` said that launch crashed, `kdash launches` that it died of OOM."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    t0 = time.time() - 900
    args = "non-default args: {{'model': 'Qwen/Qwen3-32B', 'gpu_memory_utilization': {m}}}"
    lines = [_vllm(t0, args.format(m=0.9), src="utils.py:326")]
    lines += [_vllm_stats(t0 + 10 * i) for i in range(1, 20)]
    lines += [_vllm(t0 + 200, "EngineCore encountered a fatal error.", "ERROR", "core.py:700"),
              "(EngineCore_DP0 pid=4101) Traceback (most recent call last):\n",
              "(EngineCore_DP0 pid=4101) torch.OutOfMemoryError: CUDA out of memory. Tried to "
              "allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.10 GiB is free.\n",
              _vllm(t0 + 300, args.format(m=0.85), src="utils.py:326")]
    lines += [_vllm_stats(t0 + 300 + 10 * i) for i in range(1, 20)]
    log = tmp_path / "server.log"
    log.write_text("".join(lines))
    _aged(log, 900 - 490)
    doc = _once(capsys, "--log", str(log))
    assert [launch["outcome"] for launch in doc["launches"]] == ["oom", "running"]
    assert main(["launches", "--json", str(log)]) == 0
    offline = json.loads(capsys.readouterr().out)
    rows = offline["launches"] if isinstance(offline, dict) else offline
    assert rows[0]["outcome"] == "oom"


@pytest.mark.parametrize(("engine", "probe"), [
    ("vllm", "a one-token request to `<url>/v1/completions`"),
    ("sglang", "`curl <url>/health_generate` (a one-token generation)"),
])
def test_the_silent_servers_hint_names_a_probe_that_generates_on_its_engine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        engine: str, probe: str) -> None:
    """`/health` tells no hang apart: vLLM's answers while the engine process lives, SGLang's
    before 0.4.10 always answers. The hint names a request that needs a generation."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "server.log"
    t = time.time() - 900
    log.write_text(_vllm_stats(t) if engine == "vllm" else _decode(t, 400.0))
    _aged(log, 900)
    doc = _once(capsys, "--log", str(log))
    silent = next(a for a in doc["alerts"] if a["id"] == "server_silent")
    assert probe in silent["hint"] and "/health`" not in silent["hint"]
    # vLLM serves /metrics always: --enable-metrics is SGLang's flag
    assert ("--enable-metrics" in silent["hint"]) == (engine == "sglang")


def test_a_log_copied_hours_after_its_last_line_is_as_old_as_its_stamps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`cp` or `scp` gives the copy a new mtime: its last line, 5 h 10 min old, looked written
    now in a log clock of `UTC-5:15` (a zone no place has), placed a few minutes ahead, so its
    age was unknown and nothing was said of a server silent for hours."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "server.log"
    end = time.time() - 5 * 3600 - 600
    log.write_text("".join(_decode(end - 20 + 2 * i, 400.0, running=30) for i in range(11)))
    doc = _once(capsys, "--log", str(log))
    live = doc["server"]["liveness"]
    assert live["log"] == "quiet" and live["log_age_s"] == pytest.approx(5 * 3600 + 600, abs=60)
    assert doc["server"]["log_clock"]["offset_s"] == 0.0
    assert "server_silent" in [a["id"] for a in doc["alerts"]]


def test_stamps_later_than_the_files_last_write_are_at_least_as_old_as_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No line was written after the file's mtime: time-only stamps 40 minutes ahead of it (a
    log copied from another zone or day) leave the age at least the file's, not unknown."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "server.log"
    written = time.time() - 3000
    stamp = time.strftime("%H:%M:%S", time.localtime(written + 2400))
    log.write_text(f"[{stamp} TP0] Decode batch. #running-req: 1, #token: 4142, token usage: "
                   "0.00, gen throughput (token/s): 239.00, #queue-req: 0\n")
    os.utime(log, (written, written))
    doc = _once(capsys, "--log", str(log))
    live = doc["server"]["liveness"]
    assert live["log"] == "quiet" and live["log_age_s"] == pytest.approx(3000, abs=60)


def test_a_vllm_oom_printed_raw_gets_vllms_flags(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A vLLM engine process that dies prints Python's traceback raw (`Process EngineCore_0:`,
    no log prefix); its last line named the engine SGLang, and the fix said
    `--mem-fraction-static`, a flag vLLM does not have."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    t0 = time.time() - 100
    lines = [_vllm(t0, "non-default args: {'model': 'm', 'gpu_memory_utilization': 0.95}",
                   src="utils.py:326")]
    lines += [_vllm_stats(t0 + 10 * i) for i in range(1, 8)]
    lines += ["Process EngineCore_0:\n", "Traceback (most recent call last):\n",
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
              "total capacity of 79.19 GiB of which 1.10 GiB is free.\n"]
    log = tmp_path / "server.log"
    log.write_text("".join(lines))
    doc = _once(capsys, "--log", str(log))
    oom = next(a for a in doc["alerts"] if a["id"] == "server_oom")
    assert "--gpu-memory-utilization (now 0.95" in oom["hint"]
    assert "--mem-fraction-static" not in oom["hint"]


def test_once_tells_a_prefill_servers_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The prefill server of a PD pair prints no decode line: `--once` said nothing of it but
    `launch 1 of 1`, while the dashboard showed its running requests and KV usage."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "prefill.log"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - 5))
    log.write_text(f"[{stamp}] Prefill batch. #new-seq: 5, #new-token: 5, #cached-token: 20050, "
                   "token usage: 0.34, #running-req: 34, #queue-req: 0\n")
    assert main(["--once", "--no-http", "--window", "0", "--log", str(log)]) == 0
    out = capsys.readouterr().out
    assert "last prefill 5 new seqs, 5 new tokens, 20050 cached, running 34, queue 0, " \
           "token usage 0.34" in out


def test_a_utc_log_loading_weights_on_a_tokyo_box_learns_its_clock(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A server in a UTC container, kdash on a box in Tokyo, started while the server draws
    its weight-loading bar (no stamps, minutes long): the zone is learned from the stamp before
    the bar, not left unlearned (its startup nine hours old: no start in progress)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    timestamps._full_stamp_to_epoch.cache_clear()  # it keeps times of the zone before
    try:
        log = tmp_path / "server.log"
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() - 240))
        log.write_text(f"[{stamp} TP0] Load weight begin. avail mem=78.84 GB\n"
                       "Loading safetensors checkpoint shards:  45% Completed | 9/20 [03:58<04:51]")
        doc = _once(capsys, "--log", str(log))
        assert doc["server"]["log_clock"]["offset_s"] == 9 * 3600
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
        timestamps._full_stamp_to_epoch.cache_clear()
