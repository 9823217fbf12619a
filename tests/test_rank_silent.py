"""`rank_silent`: one data-parallel rank stops printing while the others print with requests
queued. Its requests never finish (a hung scheduler) or it gets no new ones (the router), and
the sums quietly drop it: nothing else on the screen says so."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from dash.commands.cli import main


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.chdir(tmp_path)


def _dp_log(path: Path, quiet_rank_stops: float, queue: int, seconds: int = 900) -> Path:
    """Four SGLang DP ranks every 4 s for `seconds`, the last line now; DP2 prints its last
    line `quiet_rank_stops` seconds before the end (with 52 running); the others show `queue`
    queued each."""
    now = time.time()
    lines = []
    for k in range(seconds // 4 + 1):
        t = now - seconds + 4 * k
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
        for d in range(4):
            if d == 2 and t > now - quiet_rank_stops:
                continue
            lines.append(f"[{stamp} DP{d} TP{d}] Decode batch, #running-req: {50 + d}, #token: "
                         f"20000, token usage: 0.30, cuda graph: True, gen throughput "
                         f"(token/s): 1000.00, #queue-req: {0 if d == 2 else queue}")
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (now, now))
    return path


def _alerts(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, str]]:
    main(["--once", "--json", "--window", "0", "--no-http", "--log", str(path)])
    return {a["id"]: a for a in json.loads(capsys.readouterr().out)["alerts"]}


def test_a_rank_quiet_for_minutes_while_the_others_have_a_queue_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _alerts(_dp_log(tmp_path / "server.log", 420, queue=3), capsys)["rank_silent"]
    assert a["severity"] == "warn"
    assert a["message"].startswith("DP2 printed no decode line for 7 min while the other 3 "
                                   "ranks print with 9 queued")
    assert "52 running" in a["message"]
    assert "--load-balance-method" in a["hint"] and "py-spy" in a["hint"]
    assert len(a["message"]) + len(a["hint"]) < 6 * 74  # message and fix fit the panel at 80x24


@pytest.mark.parametrize(("stops", "queue"), [(420, 0), (120, 3)])
def test_a_rank_that_drained_or_paused_briefly_is_not_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], stops: float, queue: int) -> None:
    # Nothing queued: the run's tail, where ranks finish their last requests at different
    # times. Two minutes: under silent_after_s.
    assert "rank_silent" not in _alerts(_dp_log(tmp_path / "server.log", stops, queue), capsys)
