"""HttpTracker: state changes with time and reason, failures, facts, metrics, disagreement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dash.core.state.http_state import (
    HttpSample,
    HttpTracker,
    disagreement,
    facts_from_model_info,
    facts_from_server_info,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "http"
T0 = 1_750_000_000.0


def _json(version: str, name: str) -> dict:
    return json.loads((FIXTURES / version / name).read_text())


def _up(at: float, **kw: object) -> HttpSample:
    return HttpSample(at=at, reachable=True, latency_s=0.01, **kw)  # type: ignore[arg-type]


def test_starts_unknown() -> None:
    snap = HttpTracker("http://127.0.0.1:8000").snapshot(T0)
    assert snap.state == "unknown" and snap.since is None and snap.url == "http://127.0.0.1:8000"


def test_state_changes_keep_their_time_and_reason() -> None:
    tr = HttpTracker("u")
    tr.apply(_up(T0), T0)
    tr.apply(_up(T0 + 2), T0 + 2)
    snap = tr.snapshot(T0 + 2)
    assert (snap.state, snap.since, snap.last_ok_at, snap.consecutive_failures) == ("up", T0, T0 + 2, 0)
    for i in (4, 6, 8):
        tr.apply(HttpSample(at=T0 + i, reachable=False, error="connection refused"), T0 + i)
    snap = tr.snapshot(T0 + 8)
    assert snap.state == "down" and snap.since == T0 + 4 and snap.reason == "connection refused"
    assert snap.consecutive_failures == 3 and snap.last_ok_at == T0 + 2
    tr.apply(_up(T0 + 10, error="HTTP 500"), T0 + 10)
    snap = tr.snapshot(T0 + 10)
    assert snap.state == "degraded" and snap.since == T0 + 10 and snap.reason == "HTTP 500"
    assert snap.consecutive_failures == 0  # it answered: the failures to reach it are over
    tr.apply(_up(T0 + 12), T0 + 12)
    snap = tr.snapshot(T0 + 12)
    assert snap.state == "up" and snap.reason is None and snap.consecutive_failures == 0


def test_a_route_asked_less_often_keeps_the_state_degraded_between_its_asks() -> None:
    """The info routes are asked once a minute: a 401 there is still the state at the polls in
    between, which ask only the open routes (the header must not flip to "up" and back)."""
    tr = HttpTracker("u")
    tr.apply(_up(T0, error="HTTP 401", answers=(("/health", 200), ("/server_info", 401))), T0)
    for i in (2, 4, 6):
        tr.apply(_up(T0 + i, answers=(("/health", 200), ("/metrics", 200))), T0 + i)
        snap = tr.snapshot(T0 + i)
        assert (snap.state, snap.since, snap.reason) == ("degraded", T0, "HTTP 401 /server_info")
    tr.apply(_up(T0 + 60, answers=(("/health", 200), ("/server_info", 200))), T0 + 60)
    snap = tr.snapshot(T0 + 60)
    assert (snap.state, snap.reason, snap.failing) == ("up", None, ())


def test_only_a_change_kdash_saw_has_a_known_start() -> None:
    # The first poll finds the server up: it came up at some time before kdash started.
    tr = HttpTracker("u")
    tr.apply(_up(T0), T0)
    assert not tr.snapshot(T0).since_seen
    tr.apply(HttpSample(at=T0 + 2, reachable=False, error="connection refused"), T0 + 2)
    assert tr.snapshot(T0 + 2).since_seen  # kdash watched it go down
    tr.apply(_up(T0 + 4), T0 + 4)
    assert tr.snapshot(T0 + 4).since_seen


def test_metrics_vanish_when_the_server_does() -> None:
    tr = HttpTracker("u")
    tr.apply(_up(T0, metrics={"running_req": 3.0}), T0)
    assert tr.snapshot(T0).metrics == {"running_req": 3.0}
    tr.apply(HttpSample(at=T0 + 2, reachable=False, error="timeout"), T0 + 2)
    assert tr.snapshot(T0 + 2).metrics == {}


def test_facts_merge_over_polls_and_outlive_an_outage() -> None:
    tr = HttpTracker("u")
    tr.apply(_up(T0, server_info=_json("sglang-0.4.10", "get_server_info.json"),
                 model_info=_json("sglang-0.4.10", "get_model_info.json"),
                 endpoints={"server_info": "/get_server_info"}, metrics_enabled=True), T0)
    tr.apply(HttpSample(at=T0 + 2, reachable=False, error="timeout"), T0 + 2)
    facts = tr.snapshot(T0 + 2).facts
    assert facts["model"] == "qwen72b" and facts["tp_size"] == 4 and facts["dp_size"] == 1
    assert facts["kv_cache_dtype"] == "fp8_e5m2" and facts["mem_fraction_static"] == 0.85
    assert facts["kv_size_gb"] == 47.35 and facts["server_info_path"] == "/get_server_info"
    assert facts["metrics_enabled"] is True and facts["version"] == "0.4.10.post2"


def test_facts_from_every_recorded_version() -> None:
    old = facts_from_server_info(_json("sglang-0.3.6", "get_server_info.json"))
    assert old["max_total_num_tokens"] == 447136 and old["version"] == "0.3.6.post3"
    assert old["tp_size"] == 1 and old["kv_cache_dtype"] == "auto"
    assert "context_length" not in old  # null in the answer: not a fact
    new = facts_from_server_info(_json("sglang-0.5.23", "server_info.json"))
    assert new["hicache_size"] == 200 and new["model"] == "llama-70b" and new["tp_size"] == 8
    assert facts_from_model_info(_json("sglang-0.5.23", "model_info.json"))["model_type"] == "llama"
    assert "model" not in facts_from_model_info(_json("sglang-0.3.6", "get_model_info.json"))


def test_capacity_from_internal_states_when_top_level_lacks_it() -> None:
    info = {"internal_states": [{"memory_usage": {"token_capacity": 1000, "kvcache": 2.5}}]}
    assert facts_from_server_info(info)["max_total_num_tokens"] == 1000


@pytest.mark.parametrize("info", [{}, {"internal_states": "x"}, {"internal_states": [1]},
                                  {"tp_size": {"nested": 1}}, {"model_path": 3}])
def test_odd_server_info_never_crashes(info: dict) -> None:
    facts_from_server_info(info)


def test_shown_facts_are_the_logs_with_http_filling_the_gaps() -> None:
    from dash.core.snapshot import HttpSnapshot, RunSnapshot, ServerLogSnapshot

    snap = RunSnapshot(now=T0, server=ServerLogSnapshot(facts={"tp_size": 2, "avail_mem_gb": 10.5}),
                       http=HttpSnapshot(facts={"tp_size": 4, "model": "m"}))
    assert snap.facts == {"tp_size": 2, "avail_mem_gb": 10.5, "model": "m"}


def test_capacity_fact_from_metrics() -> None:
    tr = HttpTracker("u")
    tr.apply(_up(T0, metrics={"max_total_num_tokens": 5000.0}), T0)
    assert tr.snapshot(T0).facts["max_total_num_tokens"] == 5000


DECODE = {"kind": "decode", "running_req": 120, "queue_req": 3, "token_usage": 0.81}


def test_wide_disagreement_is_reported() -> None:
    tr = HttpTracker("u")
    tr.apply(_up(T0, metrics={"running_req": 4.0, "queue_req": 0.0, "token_usage": 0.05}), T0)
    text = tr.snapshot(T0, DECODE).disagreement
    assert text is not None and "running_req 4 vs 120" in text and "token_usage" in text


def test_small_differences_and_stale_log_records_are_not() -> None:
    tr = HttpTracker("u")
    tr.apply(_up(T0, metrics={"running_req": 116.0, "queue_req": 0.0, "token_usage": 0.79}), T0)
    assert tr.snapshot(T0, DECODE).disagreement is None
    tr.apply(_up(T0, metrics={"running_req": 0.0, "queue_req": 0.0, "token_usage": 0.0}), T0)
    # an idle server prints no decode lines: the last one says nothing about now
    assert tr.snapshot(T0 + 60, DECODE, last_decode_at=T0).disagreement is None
    assert tr.snapshot(T0 + 5, DECODE, last_decode_at=T0).disagreement is not None


def test_no_disagreement_across_dp_ranks_or_without_a_record() -> None:
    metrics = {"running_req": 240.0, "dp_ranks": 2.0}
    assert disagreement(metrics, DECODE) is None
    assert disagreement({"running_req": 1.0}, None) is None
    assert disagreement({"running_req": 1.0}, {"kind": "decode", "running_req": "x"}) is None


def test_a_hybrid_models_fullest_pool_is_what_metrics_counts() -> None:
    """SGLang's `/metrics` `token_usage` of a hybrid model is its fullest pool (0.5.12+; the
    full pool's before); the log record's is the full pool's: neither is a disagreement."""
    hybrid = {**DECODE, "token_usage": 0.42, "mamba_usage": 0.90, "swa_token_usage": None}
    for gauge in (0.90, 0.42):
        metrics = {"running_req": DECODE["running_req"], "token_usage": gauge}
        assert disagreement(metrics, hybrid) is None
    swa = {**DECODE, "token_usage": 0.05, "swa_token_usage": 0.95}
    assert disagreement({"token_usage": 0.95}, swa) is None
    assert "token_usage" in (disagreement({"token_usage": 0.5}, {**DECODE, "token_usage": 0.05})
                             or "")
