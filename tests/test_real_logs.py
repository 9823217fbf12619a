"""Every real log in ../shared/real-logs parses, and matches the hand-read oracles there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dash.core.log.parse import Record, parse_line

DECODE_KEYS = ("ts", "running_req", "tokens", "token_usage", "gen_throughput", "queue_req")
PREFILL_KEYS = ("ts", "new_seq", "new_token", "cached_token", "token_usage", "running_req",
                "queue_req", "input_throughput", "pending_token", "cache_hit_rate")


def _records(path: Path) -> list[Record]:
    out: list[Record] = []
    with path.open("r", encoding="utf-8", errors="replace", newline="") as fh:
        for n, line in enumerate(fh, 1):
            rec = parse_line(line, n)
            if rec is not None:
                out.append(rec)
    return out


def _ts(value: Any) -> Any:
    """The oracle prints `2025-02-27 04:46:39`; records carry `2025-02-27T04:46:39`."""
    return value.replace("T", " ") if isinstance(value, str) else value


def _pick(rec: Record, keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: (_ts(rec.get(k)) if k == "ts" else rec.get(k)) for k in keys}


def _oracle(real_logs: Path, name: str) -> dict[str, Any]:
    return json.loads((real_logs / name).read_text())


# Lines of the real logs that carry stats no rule reads (several `name: number` items), by file:
# the grok2 startup's weight-name counts, `#all_names: 835, #hit_names: 707,
# #missing_exclude_scales: 0` (TP0, TP5, TP7). Every other stats line is read, complete.
UNPARSED = {"sglang-grok2-blog-v052rc2-tp8-startup-to-decode.log": [1, 3, 4]}


def test_every_real_log_reports_what_it_should(real_logs: Path) -> None:
    """Unparsed: exactly the lines with stats no rule reads; incomplete: none (no real file
    has a stats line cut, glued or behind a prefix no rule peels)."""
    logs = sorted(real_logs.glob("*.log"))
    assert len(logs) >= 31
    for path in logs:
        recs = _records(path)
        assert all(r["line"] >= 1 for r in recs), path.name
        unparsed = [r["line"] for r in recs if r["kind"] == "unparsed"]
        assert unparsed == UNPARSED.get(path.name, []), path.name
        assert not [r for r in recs if r.get("incomplete")], path.name
        json.dumps(recs)  # the export writes them as JSON


def test_decode_oracle(real_logs: Path) -> None:
    oracle = _oracle(real_logs, "expected-decode.json")
    assert oracle
    for name, want in oracle.items():
        decodes = [r for r in _records(real_logs / name) if r["kind"] == "decode"]
        assert len(decodes) == want["count"], name
        assert _pick(decodes[0], DECODE_KEYS) == want["first"], name
        assert _pick(decodes[-1], DECODE_KEYS) == want["last"], name


def test_no_decode_records_in_files_without_decode_lines(real_logs: Path) -> None:
    with_decode = set(_oracle(real_logs, "expected-decode.json"))
    for path in real_logs.glob("sglang-*.log"):
        if path.name not in with_decode:
            assert not [r for r in _records(path) if r["kind"] == "decode"], path.name


def _events_summary(recs: list[Record]) -> dict[str, Any]:
    events = [r for r in recs if r["kind"] == "event"]

    def first(event: str, key: str, **match: Any) -> Any:
        for e in events:
            if e["event"] == event and e.get(key) is not None and all(
                e.get(k) == v for k, v in match.items()
            ):
                return e[key]
        return None

    kinds = {e["event"] for e in events}
    return {
        "cuda_graph_avail_mem_gb": first("cuda_graph", "avail_mem_gb", phase="end"),
        "error": "error" in kinds,
        "kv_cache_tokens": first("kv_cache", "tokens"),
        "max_total_num_tokens": first("kv_cache", "max_total_num_tokens"),
        "oom": "oom" in kinds,
        "ready": "ready" in kinds,
        "retract": "retract" in kinds,
        "sigquit": any(e.get("reason") == "sigquit" for e in events),
    }


def test_prefill_and_events_oracle(real_logs: Path) -> None:
    oracle = _oracle(real_logs, "expected-prefill-events-v2.json")
    assert len(oracle) >= 31
    for name, want in oracle.items():
        recs = _records(real_logs / name)
        assert _events_summary(recs) == want["events"], name
        prefills = [r for r in recs if r["kind"] == "prefill"]
        if want["prefill"] is None:
            assert prefills == [], name
            continue
        assert len(prefills) == want["prefill"]["count"], name
        assert _pick(prefills[0], PREFILL_KEYS) == want["prefill"]["first"], name
        assert _pick(prefills[-1], PREFILL_KEYS) == want["prefill"]["last"], name


VLLM_ORACLE = {
    # file: (count, first, last) as (ts, prompt tok/s, gen tok/s, running, waiting, KV usage)
    "vllm-12314-v0-metrics-swapped-pending.log": (
        6, ("01-22 18:27:20", 0.0, 41.7, 1, 0, 0.02), ("01-22 18:27:45", 0.0, 41.7, 1, 0, 0.023)),
    "vllm-19680-v1-engine-stats-single-line.log": (
        1, ("06-16 10:03:14", 1254.4, 29.2, 10, 4, 0.579), ("06-16 10:03:14", 1254.4, 29.2, 10, 4, 0.579)),
    "vllm-30599-v0.12-health-interleaved.log": (
        4, ("12-11 20:30:06", 105.8, 158.0, 1, 0, 0.003), ("12-11 20:30:36", 0.0, 178.2, 1, 0, 0.01)),
}


@pytest.mark.parametrize("name", sorted(VLLM_ORACLE))
def test_vllm_stats_oracle(real_logs: Path, name: str) -> None:
    count, first, last = VLLM_ORACLE[name]
    decodes = [r for r in _records(real_logs / name) if r["kind"] == "decode"]
    assert len(decodes) == count
    assert all(r["engine"] == "vllm" for r in decodes)
    for rec, want in ((decodes[0], first), (decodes[-1], last)):
        got = (_ts(rec["ts"]), rec["prefill_throughput"], rec["gen_throughput"],
               rec["running_req"], rec["queue_req"], rec["token_usage"])
        assert got == want
    if name.startswith("vllm-19680"):
        assert decodes[0]["prefix_hit_rate"] == 0.405
    if name.startswith("vllm-12314"):
        assert decodes[0]["swapped_req"] == 0


def test_vllm_capacity_and_oom_events(real_logs: Path) -> None:
    recs = _records(real_logs / "vllm-12330-startup-kv-cache-memory-profile.log")
    kv = [r for r in recs if r.get("event") == "kv_cache"]
    # `total_gpu_memory (39.50GiB) x gpu_memory_utilization (0.90) = 35.55GiB`, `... the rest
    # of the memory reserved for KV Cache is 11.12GiB.`, then the blocks line
    assert (kv[0]["total_gb"], kv[0]["gpu_memory_utilization"]) == (39.5, 0.9)
    assert [r.get("kv_size_gb") for r in kv] == [None, 11.12, None, None]
    assert kv[2]["gpu_blocks"] == 5691 and kv[2]["cpu_blocks"] == 2048
    assert (kv[3]["context_len"], kv[3]["max_concurrency"]) == (8192, 11.12)
    weights = [r for r in recs if r.get("event") == "load_weights"]
    assert weights[0]["mem_usage_gb"] == 14.9595
    oom = [r for r in _records(real_logs / "vllm-9290-oom-engine-error-traceback.log")
           if r.get("event") == "oom"]
    assert len(oom) == 1 and oom[0]["engine"] == "vllm" and oom[0]["ts"] == "10-11T12:27:29"


def test_crash_tail_reasons(real_logs: Path) -> None:
    recs = _records(real_logs / "sglang-9780-crash-tail-sigquit-killed.log")
    reasons = [r["reason"] for r in recs if r.get("event") == "crash"]
    assert reasons == ["sigquit", "sigquit", "sigquit", "killed"]
