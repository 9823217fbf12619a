"""One unit per kind of number: every ratio in a record is a fraction 0..1, counts are >= 0,
magnitudes finite and >= 0, whatever the server printed (values read off real lines by hand)."""

from __future__ import annotations

import pytest

from dash.core.log import convert
from dash.core.log.convert import INT, RATIO
from dash.core.log.parse import parse_line
from dash.core.log.syntax import Field


@pytest.mark.parametrize(("line", "key", "want"), [
    # sglang-1612 (real): `cache hit rate: 11.92%`
    ("[16:43:33 TP0] Prefill batch. #new-seq: 5, #new-token: 8192, #cached-token: 1832, "
     "cache hit rate: 11.92%, token usage: 0.77, #running-req: 21, #queue-req: 18",
     "cache_hit_rate", 0.1192),
    # vllm-19680 (real): `Prefix cache hit rate: 40.5%`, `GPU KV cache usage: 57.9%`
    ("INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s, "
     "Avg generation throughput: 29.2 tokens/s, Running: 10 reqs, Waiting: 4 reqs, "
     "GPU KV cache usage: 57.9%, Prefix cache hit rate: 40.5%", "prefix_hit_rate", 0.405),
    ("INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s, "
     "Avg generation throughput: 29.2 tokens/s, Running: 10 reqs, Waiting: 4 reqs, "
     "GPU KV cache usage: 57.9%, Prefix cache hit rate: 40.5%", "token_usage", 0.579),
    # sglang-11948 (real): `accept rate: 0.54` is already a fraction
    ("[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1, #token: 108, token usage: 0.00, "
     "accept len: 2.17, accept rate: 0.54, cuda graph: True, gen throughput (token/s): 0.39, "
     "#queue-req: 0, ", "accept_rate", 0.54),
    # vLLM 0.12 format string `External prefix cache hit rate: %.1f%%`, `MM cache hit rate: %.1f%%`
    ("(APIServer pid=1) INFO 12-11 20:30:06 [loggers.py:236] Engine 000: Avg prompt throughput: "
     "105.8 tokens/s, Avg generation throughput: 158.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
     "GPU KV cache usage: 0.3%, Prefix cache hit rate: 68.2%, External prefix cache hit rate: "
     "12.5%, MM cache hit rate: 100.0%", "external_prefix_hit_rate", 0.125),
    ("(APIServer pid=1) INFO 12-11 20:30:06 [loggers.py:236] Engine 000: Avg prompt throughput: "
     "105.8 tokens/s, Avg generation throughput: 158.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
     "GPU KV cache usage: 0.3%, MM cache hit rate: 100.0%", "mm_cache_hit_rate", 1.0),
    # SGLang 0.5.23 `fwd occupancy: {:.2f}%`
    ("[2026-03-01 12:00:05] Decode batch, #running-req: 32, #token: 41230, token usage: 0.09, "
     "gen throughput (token/s): 2327.27, #queue-req: 0, fwd occupancy: 87.50%",
     "fwd_occupancy", 0.875),
])
def test_every_ratio_is_a_fraction(line: str, key: str, want: float) -> None:
    rec = parse_line(line, 1)
    assert rec is not None and rec[key] == want


@pytest.mark.parametrize(("text", "want"), [
    ("0.54", 0.54), ("71.20%", 0.712), ("2.0%.", 0.02), ("100.0%", 1.0), ("0.0%", 0.0),
    ("1.00", 1.0), ("1.5", None), ("101%", None), ("-0.2", None), ("nan", None), ("n/a", None),
])
def test_ratio_converter(text: str, want: float | None) -> None:
    assert RATIO.read(text) == want


@pytest.mark.parametrize(("conv", "text"), [
    (INT, "-3"), (INT, "²"), (convert.FLOAT, "-1.5"), (convert.FLOAT, "inf"),
    (convert.COUNT, "-2 reqs"), (convert.FLOAT, "1e999"),
])
def test_out_of_range_numbers_are_no_values(conv: convert.Conv, text: str) -> None:
    assert conv.read(text) is None


def test_a_percent_unit_is_refused() -> None:
    """The bulk reader reads a value without its unit: `0.5%` would become 0.5."""
    with pytest.raises(ValueError, match="percent"):
        Field("GPU KV cache usage", "token_usage", RATIO, "%")


def test_a_usage_above_one_is_no_usage_and_the_record_says_so() -> None:
    rec = parse_line("[2026-03-01 12:00:05] Decode batch, #running-req: 3, #token: 9, "
                     "token usage: 1.50, gen throughput (token/s): 1.50, #queue-req: 0", 1)
    assert rec is not None and rec["kind"] == "decode" and rec["token_usage"] is None
