"""What a new user saw wrong on real shapes of logs, end to end through the CLI: each test is
one class of log (no stamps, a few seconds of lines, ...) and what every command must say."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from dash.commands.cli import main

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
