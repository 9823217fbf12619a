"""What a new user saw wrong, end to end through the CLI: each test is one class of input (a
log's printed rates, a config key, an output record's shape) and what every command must say."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dash.commands.cli import main


def _vllm_stats(n: int, rate: float, engine: int | None = None) -> str:
    head = "" if engine is None else f"Engine {engine:03d}: "
    return (f"INFO 03-01 08:{n // 60:02d}:{n % 60:02d} [loggers.py:123] {head}Avg prompt throughput: "
            f"120.0 tokens/s, Avg generation throughput: 181.0 tokens/s, Running: 4 reqs, "
            f"Waiting: 0 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: {rate:.1f}%\n")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_summary_shows_the_prefix_hit_rate_vllm_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM prints no prefill lines: its prefix cache's hit rate is the `Prefix cache hit rate`
    of its stats lines. `summary` shows it as `launches` does (a fraction in JSON, a percentage
    on screen), not `-`."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "server.log"
    log.write_text("".join(_vllm_stats(n * 10, rate) for n, rate in enumerate((40.0, 50.4))))
    doc = json.loads(_run(capsys, "summary", "--json", str(log)))
    assert doc["prefix_hit"]["ratio"] == pytest.approx(0.452)
    assert doc["prefix_hit"]["source"] == "printed_rate"
    text = _run(capsys, "summary", str(log))
    assert "prefix hit  45.20%" in text
    launches = json.loads(_run(capsys, "launches", "--json", str(log)))
    assert launches["launches"][0]["figures"]["prefix_hit"] == pytest.approx(doc["prefix_hit"]["ratio"])


def test_vllm_v0s_own_prefix_cache_line_gives_the_hit_rate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM V0 prints its prefix cache's hit rate on a line of its own after each stats line
    (`Prefix cache hit rate: GPU: 45.20%, CPU: 0.00%`): a stats family of the grammar, read by
    `summary`, `launches` and `export` alike."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "server.log"
    lines = []
    for n, rate in enumerate((40.0, 50.4)):
        lines.append(f"INFO 03-01 08:00:{n * 10:02d} metrics.py:455] Avg prompt throughput: 120.0 "
                     "tokens/s, Avg generation throughput: 181.0 tokens/s, Running: 4 reqs, "
                     "Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 12.5%, CPU KV cache "
                     "usage: 0.0%.\n")
        lines.append(f"INFO 03-01 08:00:{n * 10:02d} metrics.py:471] Prefix cache hit rate: "
                     f"GPU: {rate:.2f}%, CPU: 0.00%\n")
    log.write_text("".join(lines))
    doc = json.loads(_run(capsys, "summary", "--json", str(log)))
    assert doc["prefix_hit"]["ratio"] == pytest.approx(0.452)
    assert doc["records"]["cache"] == 2 and doc["incomplete"] == 0
    launches = json.loads(_run(capsys, "launches", "--json", str(log)))
    assert launches["launches"][0]["figures"]["prefix_hit"] == pytest.approx(0.452)
    exported = _run(capsys, "export", str(log), "--format", "jsonl")
    cache = [r for r in map(json.loads, exported.splitlines()) if r["kind"] == "cache"]
    assert [r["prefix_hit_rate"] for r in cache] == [0.4, 0.504]


def test_summary_prefix_hit_of_prefill_tokens_is_unchanged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-03-01 08:01:00] Prefill batch, #new-seq: 1, #new-token: 300, "
                   "#cached-token: 100, token usage: 0.10, #running-req: 0, #queue-req: 0\n")
    doc = json.loads(_run(capsys, "summary", "--json", str(log)))
    assert doc["prefix_hit"] == {"ratio": 0.25, "source": "prefill_tokens", "tokens": 400}
    assert "prefix hit  25.00% of 400 prefill tokens" in _run(capsys, "summary", str(log))


def _sglang_decode(t: float) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
    return (f"[{stamp} TP0] Decode batch. #running-req: 509, #token: 180776, token usage: 0.43, "
            f"gen throughput (token/s): 7897.87, #queue-req: 0\n")


def test_a_big_log_of_a_server_gone_an_hour_is_not_live(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A log larger than one read (2 MB: any long run's) is backfilled in several reads; the
    second is the log's history too, not lines written while kdash watched. A server gone an
    hour is `quiet` and down, not `live` with `http_unreachable` ("the server works")."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "server.log"
    end = time.time() - 3600
    n = 3_000_000 // len(_sglang_decode(end))
    log.write_text("".join(_sglang_decode(end - n + i) for i in range(n)))
    os.utime(log, (end, end))
    assert main(["--once", "--json", "--no-http", "--window", "0", "--log", str(log)]) == 0
    live = json.loads(capsys.readouterr().out)["server"]["liveness"]
    assert live["log"] == "quiet" and live["log_age_s"] == pytest.approx(3600, abs=60)


def test_once_returns_with_a_backfill_smaller_than_the_log(tmp_path: Path) -> None:
    """`backfill_bytes` below the log's size: the lines before the window are counted in the
    background, and `--once` waits for that count; it must not wait for the next read to adopt
    a count that has finished (it hung forever)."""
    log = tmp_path / "server.log"
    now = time.time()
    log.write_text("".join(_sglang_decode(now - 100 + i) for i in range(100)))
    (tmp_path / "kdash.toml").write_text("backfill_bytes = 1000\n")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run([sys.executable, "-m", "dash", "--once", "--json", "--no-http",
                           "--window", "0", "--log", str(log)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["server"]["last_decode"]["line"] == 100


def _vllm_start(util: float) -> str:
    return (f"INFO 03-01 08:00:00 [utils.py:326] non-default args: {{'model': 'Qwen/Qwen3-8B', "
            f"'gpu_memory_utilization': {util}}}\n"
            "INFO 03-01 08:00:05 [kv_cache_utils.py:716] GPU KV cache size: 270,000 tokens\n")


def test_launches_shows_the_starts_a_rewritten_log_no_longer_holds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each restart rewrote the log (`nohup ... > server.log`): the dashboard and `--once` kept
    the earlier starts and show them; `kdash launches` showed only the last one."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "server.log"
    log.write_text(_vllm_start(0.90) + _vllm_stats(10, 40.0))
    assert main(["--once", "--json", "--no-http", "--window", "0", "--log", str(log)]) == 0
    capsys.readouterr()
    log.write_text(_vllm_start(0.85).replace("08:00:0", "09:00:0") + _vllm_stats(3610, 50.0))
    doc = json.loads(_run(capsys, "launches", "--json", str(log)))
    assert [(x["args"]["gpu_memory_utilization"], x["earlier"]) for x in doc["launches"]] == [
        (0.90, True), (0.85, False)]
    text = _run(capsys, "launches", str(log))
    assert text.startswith("2 launches in 1 log") and "#1: kept by an earlier kdash" in text


@pytest.mark.parametrize("name", ["truncated_share", "errors_share", "empty_share",
                                  "reasoning_missing_share", "rank_imbalance_usage",
                                  "rank_imbalance_gap", "kv_usage", "plateau_drop"])
def test_every_share_and_usage_threshold_refuses_a_percentage(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """`truncated_share = 10` (meant as 10 %) can never be reached by a share 0..1: it turned
    the alert off in silence. Every ratio threshold says so in one line, as `kv_usage` did."""
    cfg = tmp_path / "k.toml"
    cfg.write_text(f"[alerts]\n{name} = 10\n")
    assert main(["--once", "--config", str(cfg), "--no-http", "--log", str(tmp_path / "x")]) == 2
    assert f"{name} = 10: a ratio 0..1; did you mean 0.10?" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["invalid_lines", "outputs_min_samples"])
def test_count_thresholds_of_the_outputs_are_whole_numbers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    cfg = tmp_path / "k.toml"
    cfg.write_text(f"[alerts]\n{name} = 0.5\n")
    assert main(["--once", "--config", str(cfg), "--no-http", "--log", str(tmp_path / "x")]) == 2
    assert "a count, a whole number of at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("key", ["log", "client_log", "state_dir"])
def test_an_empty_path_in_the_config_is_named_as_such(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str) -> None:
    """`log = ""` was taken as the working directory (`--log .: is a directory`)."""
    cfg = tmp_path / "k.toml"
    cfg.write_text(f'{key} = ""\n')
    assert main(["--once", "--config", str(cfg), "--no-http", "--outputs", "x/*.jsonl"]) == 2
    assert f"{key} must be a path, got ''" in capsys.readouterr().err


def test_help_says_where_settings_come_from(capsys: pytest.CaptureFixture[str]) -> None:
    """`kdash --help` named `--config FILE` only: a new user could not learn that ./kdash.toml
    and the user config file are read too (and can change what a plain `kdash` does)."""
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "config.toml, then ./kdash.toml, then --config FILE, then the flags" in text
    assert "[alerts] (every threshold)" in text


def test_summary_lists_a_silence_in_the_middle_of_a_log(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Decode lines with 5 running, 20 minutes of nothing, decode lines again: what the
    dashboard said then (`server_silent`), `summary` must list."""
    t0 = time.mktime((2026, 3, 1, 8, 0, 0, 0, 0, -1))
    times = [t0 + 2 * i for i in range(60)] + [t0 + 1320 + 2 * i for i in range(60)]
    log = tmp_path / "server.log"
    log.write_text("".join(_sglang_decode(t).replace("509", "5") for t in times))
    doc = json.loads(_run(capsys, "summary", "--json", str(log)))
    assert [a["id"] for a in doc["alerts"]] == ["server_silent"]
    assert doc["alerts"][0]["message"].startswith("no decode/prefill line for 20 min")
    # and with the thresholds the dashboard was given: a silence of an hour is the first
    cfg = tmp_path / "k.toml"
    cfg.write_text("[alerts]\nsilent_after_s = 3600\n")
    doc = json.loads(_run(capsys, "summary", "--json", "--config", str(cfg), str(log)))
    assert doc["alerts"] == []


def test_once_text_says_what_the_tables_quality_columns_say(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The dashboard's table shows each partition's trunc, tok and err; `--once` (text) showed
    none of them, so a cron mail of it said nothing of a run whose answers are cut off."""
    out = tmp_path / "A.jsonl"
    out.write_text("".join(json.dumps({
        "id": f"c{i}", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"},
                     "finish_reason": "length" if i % 4 == 0 else "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 100 + i, "total_tokens": 105 + i}})
        + "\n" for i in range(40)) + "not json\n")
    assert main(["--once", "--window", "0", "--no-http", "--outputs", str(out)]) in (0, 1)
    text = capsys.readouterr().out
    assert ("last 40 samples: 25% cut at the token limit, median 119 output tokens; "
            "0 error records, 1 invalid lines") in text
