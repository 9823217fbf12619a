"""`rank_imbalance` on a vLLM data-parallel server (`Engine 00N:` stats lines) read by `check`
and `--once`: its fix in vLLM's terms, and only once the log shows it holding long enough."""

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
