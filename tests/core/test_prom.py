"""Prometheus text -> normalised metrics: every SGLang/vLLM spelling, DP ranks, garbage."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dash.core.state.metrics_text import filter_lines, parse_metrics

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "http"


@pytest.mark.parametrize(
    ("version", "running", "queue", "usage"),
    [("sglang-0.4.10", 37, 4, 0.33), ("sglang-0.5.23", 212, 0, 0.7),
     ("vllm-0.7.3", 24, 3, 0.375), ("vllm-0.33", 24, 3, 0.375)],
)
def test_recorded_expositions(version: str, running: float, queue: float, usage: float) -> None:
    result = parse_metrics((FIXTURES / version / "metrics.txt").read_text())
    assert result.error is None
    assert result.metrics["running_req"] == running
    assert result.metrics["queue_req"] == queue
    assert result.metrics["token_usage"] == usage
    assert result.engine == version.split("-")[0]


def test_new_sglang_details() -> None:
    m = parse_metrics((FIXTURES / "sglang-0.5.23" / "metrics.txt").read_text()).metrics
    assert m["cached_tokens_total"] == 350_000_000  # the cache_source="total" series, not the sum
    assert m["realtime_tokens_total"] == 345_678_901  # summed over `mode`
    assert m["max_total_num_tokens"] == 2_614_272 and m["retracted_total"] == 12
    assert m["ttft_seconds_count"] == 812_345


@pytest.mark.parametrize("prefix", ["sglang:", "sglang_"])
def test_both_sglang_prefixes(prefix: str) -> None:
    text = (f"# TYPE {prefix}num_running_reqs gauge\n{prefix}num_running_reqs{{tp_rank=\"0\"}} 5\n"
            f"{prefix}token_usage 0.5\n{prefix}gen_throughput 100.5\n")
    m = parse_metrics(text).metrics
    assert m == {"running_req": 5.0, "token_usage": 0.5, "gen_throughput": 100.5}


def test_dp_ranks_are_summed_and_usage_takes_the_worst_rank() -> None:
    text = "\n".join([
        'sglang:num_running_reqs{dp_rank="0",tp_rank="0"} 10',
        'sglang:num_running_reqs{dp_rank="1",tp_rank="0"} 12',
        'sglang:token_usage{dp_rank="0"} 0.2',
        'sglang:token_usage{dp_rank="1"} 0.9',
    ])
    m = parse_metrics(text).metrics
    assert m["running_req"] == 22 and m["token_usage"] == 0.9 and m["dp_ranks"] == 2


def test_every_tp_rank_publishing_is_not_counted_n_times() -> None:
    # --enable-metrics-for-all-schedulers: each TP rank reports the same batch
    text = "\n".join(f'sglang:num_running_reqs{{tp_rank="{r}"}} 7' for r in range(8))
    assert parse_metrics(text).metrics["running_req"] == 7


def test_unused_families_are_dropped_before_parsing() -> None:
    text = (FIXTURES / "sglang-0.5.23" / "metrics.txt").read_text()
    kept, families = filter_lines(text)
    assert families == 30
    assert "_bucket" not in kept and "func_latency" not in kept
    assert "sglang:num_running_reqs" in kept


@pytest.mark.parametrize("body", ["hello world garbage", "<html><body>502</body></html>",
                                  "\x00\ufffd{{{", "sglang:num_running_reqs{tp_rank=\"0\" 3\n",
                                  "sglang:token_usage abc\n"])
def test_garbage_is_an_error_value(body: str) -> None:
    result = parse_metrics(body)
    assert result.error is not None and result.error.startswith("bad body")
    assert result.metrics == {}


def test_empty_exposition_is_fine() -> None:
    assert parse_metrics("") .error is None


def test_other_exporters_give_no_metrics_but_no_error() -> None:
    result = parse_metrics("# TYPE node_load1 gauge\nnode_load1 0.5\n")
    assert result.error is None and result.metrics == {} and result.families == 1


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_never_raises(text: str) -> None:
    parse_metrics(text)
    parse_metrics("sglang:num_running_reqs" + text)
