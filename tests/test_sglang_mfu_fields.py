"""SGLang's `--enable-mfu-metrics` figures, taught in the grammar alone, reach every reader.

The lines are built from SGLang's own format strings
(`python/sglang/srt/managers/scheduler_components/metrics_reporter.py`, 0.5.x main,
`report_decode_stats` / `report_prefill_stats`):

    msg += (
        f", est. decode TFLOPS/s (per GPU): {tflops_per_s:.2f}, "
        f"est. read BW (GB/s per GPU): {read_gb_per_s:.2f}, "
        f"est. write BW (GB/s per GPU): {write_gb_per_s:.2f}"
    )
    msg += f", est. prefill TFLOPS/s (per GPU): {tflops_per_s:.2f}"
    msg += f", fwd occupancy: {self.fwd_occupancy:.2f}%"   # SGLANG_ENABLE_METRICS_DEVICE_TIMER

appended after `#queue-req: {n}` (decode) and `input throughput (token/s): {x:.2f}` (prefill).
`fwd_occupancy` starts as `float("nan")`, so the first line of a window prints `nan%`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from live_read import live_server

from dash.commands.summary import summarize
from dash.core.log.grammar import GRAMMAR
from dash.core.log.parse import parse_line

DECODE = ("[2026-03-01 08:{m:02d}:{s:02d} TP0] Decode batch, #running-req: 8, #token: 100, "
          "token usage: 0.10, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0"
          + ", est. decode TFLOPS/s (per GPU): {tf:.2f}, "
          "est. read BW (GB/s per GPU): {rd:.2f}, "
          "est. write BW (GB/s per GPU): {wr:.2f}"
          + ", fwd occupancy: {occ}%")
PREFILL = ("[2026-03-01 08:{m:02d}:{s:02d} TP0] Prefill batch, #new-seq: 1, #new-token: 512, "
           "#cached-token: 0, token usage: 0.10, #running-req: 7, #queue-req: 0, "
           "#pending-token: 0, cuda graph: False, input throughput (token/s): 2048.00"
           + ", est. prefill TFLOPS/s (per GPU): {tf:.2f}")


def _decode(i: int) -> str:
    occ = "nan" if i % 10 == 0 else f"{50 + i % 40:.2f}"
    return DECODE.format(m=i // 60, s=i % 60, tf=10 + i % 5, rd=400 + i % 9, wr=1 + i % 3,
                         occ=occ)


def _log(tmp_path: Path, seconds: int = 600) -> Path:
    lines = []
    for i in range(seconds):
        if i % 20 == 0:
            lines.append(PREFILL.format(m=i // 60, s=i % 60, tf=80 + i % 7))
        lines.append(_decode(i))
    path = tmp_path / "server.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


LAST = {"tflops_per_gpu": 10.0 + 599 % 5, "read_gbps_per_gpu": 400.0 + 599 % 9,
        "write_gbps_per_gpu": 1.0 + 599 % 3, "fwd_occupancy": round((50 + 599 % 40) / 100, 6)}


def test_the_decode_and_prefill_lines_carry_them() -> None:
    d = parse_line(_decode(7), 1)
    assert d is not None and d["kind"] == "decode" and not d.get("incomplete")
    assert (d["tflops_per_gpu"], d["read_gbps_per_gpu"], d["write_gbps_per_gpu"],
            d["fwd_occupancy"]) == (12.0, 407.0, 2.0, 0.57)
    p = parse_line(PREFILL.format(m=0, s=1, tf=87.65), 2)
    assert p is not None and p["kind"] == "prefill" and p["tflops_per_gpu"] == 87.65
    assert p["input_throughput"] == 2048.0


def test_an_occupancy_not_yet_measured_is_no_value() -> None:
    """`nan%` is what SGLang prints before its device timer has a window: null, the rest read."""
    d = parse_line(_decode(0), 1)
    assert d is not None and d["fwd_occupancy"] is None and d["tflops_per_gpu"] == 10.0
    assert not d.get("incomplete")


def test_export(tmp_path: Path, exported: Callable[..., list[dict[str, Any]]]) -> None:
    """The bulk reader (learned shapes, worker processes) reads them as the line parser does."""
    path = _log(tmp_path)
    rows = exported(path)
    want = [parse_line(text, n) for n, text in enumerate(path.read_text().splitlines(), 1)]
    assert [r["tflops_per_gpu"] for r in rows] == [w["tflops_per_gpu"] for w in want if w]
    decodes = [r for r in rows if r["kind"] == "decode"]
    prefills = [r for r in rows if r["kind"] == "prefill"]
    assert len(decodes) == 600 and len(prefills) == 30
    assert {k: decodes[-1][k] for k in LAST} == LAST
    assert [r["fwd_occupancy"] for r in decodes[:2]] == [None, 0.51]
    assert prefills[-1]["tflops_per_gpu"] == 80.0 + 580 % 7


def test_summary(tmp_path: Path) -> None:
    doc = summarize(_log(tmp_path), GRAMMAR)
    assert {k: doc["last_decode"][k] for k in LAST} == LAST


def test_live_dashboard(tmp_path: Path) -> None:
    server = live_server(_log(tmp_path))
    assert server.last_decode is not None
    assert {k: server.last_decode[k] for k in LAST} == LAST
    assert server.last_prefill is not None
    assert server.last_prefill["tflops_per_gpu"] == 80.0 + 580 % 7


def test_the_summary_says_what_the_server_estimated(tmp_path: Path) -> None:
    """The mean and last over the log (`nan%`, not measured, is no sample), and the report line."""
    from dash.commands.summary import render_text

    doc = summarize(_log(tmp_path), GRAMMAR)
    tflops = [10.0 + i % 5 for i in range(600)]
    busy = [(50 + i % 40) / 100 for i in range(600) if i % 10]
    assert doc["perf"] == {
        "tflops_per_gpu": {"mean": round(sum(tflops) / 600, 4), "last": 14.0, "samples": 600},
        "fwd_occupancy": {"mean": round(sum(busy) / len(busy), 4), "last": 0.89,
                          "samples": 540}}
    assert "est. perf   TFLOP/s per GPU mean 12.0, last 14.0 over 600 lines" in render_text(doc, 120)


def test_vllm_mfu_lines_in_the_summary(tmp_path: Path) -> None:
    """vllm/v1/metrics/perf.py: `"%sMFU: %.1f TF/s/GPU %.1f GB/s/GPU"`, after the stats line."""
    api = "(APIServer pid=1) INFO 09-10 12:{m:02d}:{s:02d} [loggers.py:236] Engine 000: "
    lines = []
    for i in range(120):
        m, s = divmod(10 * i, 60)
        lines.append(api.format(m=m, s=s) + "Avg prompt throughput: 0.0 tokens/s, Avg generation "
                     "throughput: 300.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache "
                     "usage: 12.0%, Prefix cache hit rate: 52.5%")
        lines.append(api.format(m=m, s=s) + f"MFU: {300 + i % 3:.1f} TF/s/GPU 1520.3 GB/s/GPU")
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines) + "\n")
    doc = summarize(path, GRAMMAR)
    assert doc["perf"] == {"tflops_per_gpu": {"mean": 301.0, "last": 302.0, "samples": 120},
                           "fwd_occupancy": None}


def test_the_device_timers_window_with_idle_time(
        tmp_path: Path, exported: Callable[..., list[dict[str, Any]]]) -> None:
    """SGLang 0.5.23 (`metrics_reporter.py`, `_ForwardOccupancyLogWindow.log_string`), appended
    with `msg += ", " + self.forward_occupancy_log_string()` to the decode and prefill lines:

        f"fwd occupancy: {fwd_occupancy:.2f}%"
        f", fwd+idle occupancy: {fwd_idle_occupancy:.2f}%"
    """
    head = ("[2026-03-01 08:00:{s:02d} TP0] Decode batch, #running-req: 8, #token: 100, "
            "token usage: 0.10, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0")
    lines = [head.format(s=s) + f", fwd occupancy: {60 + s / 4:.2f}%, "
             f"fwd+idle occupancy: {90 + s / 8:.2f}%" for s in range(60)]
    path = tmp_path / "server.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    d = parse_line(lines[2], 3)
    assert d is not None and not d.get("incomplete")
    assert (d["fwd_occupancy"], d["fwd_idle_occupancy"]) == (0.605, 0.9025)
    rows = exported(path)
    printed = [float(f"{90 + s / 8:.2f}") for s in range(60)]
    assert [r["fwd_idle_occupancy"] for r in rows] == [round(p / 100, 6) for p in printed]
