"""vLLM's per-step lines (`--enable-logging-iteration-details`), taught in the grammar alone.

From `vllm/v1/metrics/loggers.py` (0.34, `LoggingStatLogger._log_iteration_details`):

    logger.info(
        "%sIteration(%d): %d context requests, %d context tokens, "
        "%d generation requests, %d generation tokens, "
        "iteration elapsed time: %.2f ms%s, "
        "%s KV cache usage: %.1f%%%s",
        self._log_prefix_for_engine(engine_idx), details.iteration_index, ...,
        " (dummy)" if details.is_dummy else "", self.kv_cache_device,
        scheduler_stats.kv_cache_usage * 100, encoder_msg)

with `encoder_msg` = `, encoder inputs: %d, encoder output embeddings: %d` for multimodal steps.
A line a step: before, each was counted as a stats line kdash could not read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dash.core.log.parse import parse_line
from dash.core.state.server_log import ServerLogTracker

PREFIX = "(EngineCore_DP0 pid=479) INFO 12-01 10:{m:02d}:{s:02d} [loggers.py:199] "


def _line(i: int) -> str:
    dummy = " (dummy)" if i % 50 == 7 else ""
    encoder = f", encoder inputs: {i % 3}, encoder output embeddings: {i % 3 * 588}" \
        if i % 3 else ""
    return (PREFIX.format(m=i // 600 % 60, s=i // 10 % 60)
            + f"Engine {i % 2:03d}: Iteration({i}): {i % 4} context requests, {i % 4 * 512} "
            f"context tokens, {30 + i % 5} generation requests, {30 + i % 5} generation tokens, "
            f"iteration elapsed time: {20 + i % 7 * 1.25:.2f} ms{dummy}, "
            f"GPU KV cache usage: {i % 1000 / 10:.1f}%{encoder}")


def test_a_step_line_is_read_with_its_figures() -> None:
    r = parse_line(_line(7), 1)
    assert r is not None and r["kind"] == "iteration" and r["engine"] == "vllm"
    assert (r["engine_index"], r["iteration"], r["context_req"], r["context_tokens"],
            r["generation_req"], r["generation_tokens"], r["elapsed_ms"], r["token_usage"]) == (
        1, 7, 3, 1536, 32, 32, 20.0, 0.007)
    assert r["dummy"] is True and r["encoder_inputs"] == 1
    assert r["encoder_output_tokens"] == 588 and not r.get("incomplete")
    assert "dummy" not in (parse_line(_line(8), 1) or {})


def test_step_lines_are_not_counted_as_lines_kdash_cannot_read() -> None:
    tracker = ServerLogTracker()
    tracker.feed([parse_line(_line(i), i) for i in range(1, 101)], 1_764_583_200.0)
    snap = tracker.snapshot(1_764_583_200.0)
    assert (snap.lines, snap.unparsed) == (100, 0)


def test_export_reads_them_as_the_line_parser_does(tmp_path: Path, exported: Callable[..., list[dict[str, Any]]]) -> None:
    path = tmp_path / "vllm.log"
    path.write_text("".join(_line(i) + "\n" for i in range(1, 3001)), encoding="utf-8")
    want = [parse_line(text, n) for n, text in enumerate(path.read_text().splitlines(), 1)]
    assert exported(path) == want and len(want) == 3000
