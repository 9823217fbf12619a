"""A hybrid model's pools: the record keeps each pool's usage as printed (`token_usage` the full
pool's), and the dashboard's usage, charts and `kv_saturated` take the fullest pool's, as
SGLang's own gauge does."""

from __future__ import annotations

from dash.core.log.parse import parse_line
from dash.core.state.run import replay_alerts


def _line(i: int, queue: int) -> str:
    return (f"[2026-01-10 10:{1 + i // 12:02d}:{(i % 12) * 5:02d} TP0] Decode batch, #running-req: "
            "200, #full token: 160000, full token usage: 0.20, #swa token: 190000, swa token "
            f"usage: 0.98, cuda graph: True, gen throughput (token/s): 5000.00, #queue-req: {queue}")


def test_a_full_sliding_window_pool_is_a_full_cache() -> None:
    lines = ["[2026-01-10 10:00:00] server_args=ServerArgs(model_path='openai/gpt-oss-120b')",
             *(_line(i, 10 + 2 * i) for i in range(120))]
    recs = [parse_line(text, n + 1) for n, text in enumerate(lines)]
    assert recs[1] is not None and recs[1]["token_usage"] == 0.2  # the record: as printed
    fired = {a.id: a for a in replay_alerts(recs)}
    assert "kv_saturated" in fired and fired["kv_saturated"].message.startswith("KV cache 98% full")
