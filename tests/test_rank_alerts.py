"""The data-parallel rank alerts read by `check` and `--once` on real-shaped logs written in
tmp_path: `rank_imbalance` on a vLLM server (`Engine 00N:` stats lines: its fix in vLLM's
terms, and only once the log shows it holding long enough), and `rank_silent` (one rank stops
printing while the others print with requests queued: its requests never finish, or it gets no
new ones, and the sums quietly drop it)."""

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


def _vllm_dp_log(path: Path, seconds: int, full: float = 95.0) -> Path:
    """Two engines' stats lines every 10 s for `seconds`, the last one now: engine 1's KV
    cache at `full`%, engine 0's at 40%."""
    now = time.time()
    lines = [f"(APIServer pid=10) INFO {time.strftime('%m-%d %H:%M:%S', time.localtime(now - seconds))}"
             " [utils.py:1] non-default args: {'model': 'm', 'data_parallel_size': 2}"]
    for k in range(seconds // 10 + 1):
        stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(now - seconds + 10 * k))
        for e, usage in ((0, 40.0), (1, full)):
            lines.append(f"(APIServer pid=10) INFO {stamp} [loggers.py:236] Engine {e:03d}: Avg "
                         "prompt throughput: 10.0 tokens/s, Avg generation throughput: "
                         f"{500 + 100 * e}.0 tokens/s, Running: {20 + e} reqs, Waiting: 0 reqs, "
                         f"GPU KV cache usage: {usage}%, Prefix cache hit rate: 0.0%")
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (now, now))
    return path


def _alerts(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, str]]:
    main(["--once", "--json", "--window", "0", "--no-http", "--log", str(path)])
    return {a["id"]: a for a in json.loads(capsys.readouterr().out)["alerts"]}


def test_a_vllm_rank_imbalance_names_vllms_balancing_not_sglangs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _alerts(_vllm_dp_log(tmp_path / "server.log", 400), capsys)["rank_imbalance"]
    assert a["message"] == "engine 1's KV cache is 95% full while the other rank sits at 40%"
    assert "SGLang" not in a["hint"] and "--load-balance-method" not in a["hint"]
    assert "--data-parallel" in a["hint"]


def test_check_waits_until_the_log_shows_the_imbalance_holding(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 100 s of lines with one engine full: the dashboard would wait rank_imbalance_after_s
    # (180 s) before it fires; a check on the same lines must not warn sooner.
    path = _vllm_dp_log(tmp_path / "server.log", 100)
    assert "rank_imbalance" not in _alerts(path, capsys)
    assert main(["check", "--window", "0", "--no-http", "--log", str(path)]) == 0


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
