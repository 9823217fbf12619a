"""What `summary`, the server log tracker and the server panel make of the new shapes:
speculative decoding's acceptance, incomplete stats lines, spec/mfu records, capacity facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from dash.commands.summary import render_text, summarize
from dash.core.log.parse import parse_line
from dash.core.state.server_log import ServerLogTracker

API = "(APIServer pid=1) INFO 09-10 12:00:{s:02d} [loggers.py:236] "
VLLM_LOG = "\n".join([
    API.format(s=10) + "Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: "
    "300.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.0%, Prefix cache "
    "hit rate: 52.5%",
    API.format(s=10) + "SpecDecoding metrics: Mean acceptance length: 3.10, Accepted throughput: "
    "142.40 tokens/s, Drafted throughput: 200.00 tokens/s, Accepted: 1424 tokens, Drafted: 2000 "
    "tokens, Per-position acceptance rate: 0.812, 0.703, 0.621, Avg Draft acceptance rate: 71.2%",
    API.format(s=10) + "Engine 000: MFU: 312.4 TF/s/GPU 1520.3 GB/s/GPU",
    API.format(s=20) + "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
    "310.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 13.0%, Prefix cache "
    "hit rate: 52.5%",
    API.format(s=20) + "SpecDecoding metrics: Mean acceptance length: 2.50, Accepted throughput: "
    "120.00 tokens/s, Drafted throughput: 200.00 tokens/s, Accepted: 1200 tokens, Drafted: 2000 "
    "tokens, Per-position acceptance rate: 0.700, 0.500, 0.300, Avg Draft acceptance rate: 50.0%",
    # cut by a terminal: read, and counted
    API.format(s=30) + "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
    "305.0 tokens/s, Running: 4 re",
]) + "\n"


def test_summary_reports_acceptance_and_incomplete_lines(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(VLLM_LOG)
    doc = summarize(log)
    assert doc["records"] == {"decode": 3, "prefill": 0, "event": 0, "unparsed": 0, "mfu": 1,
                              "spec": 2}
    assert doc["spec"] == {"accept_len": {"mean": 2.8, "last": 2.5, "samples": 2},
                           "accept_rate": {"mean": 0.606, "last": 0.5, "samples": 2}}
    assert doc["incomplete"] == 1 and doc["unparsed_samples"] == []
    sample = doc["incomplete_samples"][0]
    assert sample["line"] == 6 and "no queue_req" in sample["incomplete"]
    text = render_text(doc, 120)
    assert "accept len mean 2.80, last 2.50 over 2 lines" in text
    assert "incomplete (no queue_req; no token_usage)" in text and "spec 2" in text


def test_summary_of_an_sglang_eagle_log(real_logs: Path) -> None:
    """sglang-11948: accept len 2.17, 1.95, 1.80, 2.05, 1.80; accept rate .54 .49 .45 .51 .45."""
    doc = summarize(real_logs / "sglang-11948-eagle3-decode-accept-len.log")
    assert doc["spec"] == {"accept_len": {"mean": 1.954, "last": 1.8, "samples": 5},
                           "accept_rate": {"mean": 0.488, "last": 0.45, "samples": 5}}


def test_a_log_without_speculative_decoding_has_no_spec(real_logs: Path) -> None:
    assert summarize(real_logs / "sglang-13023-decode-comma-cuda-graph-false-true.log")["spec"] is None


def test_the_tracker_keeps_acceptance_over_time_and_counts_incomplete_lines() -> None:
    tr = ServerLogTracker("vllm.log")
    recs = [parse_line(line, n) for n, line in enumerate(VLLM_LOG.splitlines(), 1)]
    tr.feed(recs, 1.9e9)
    snap = tr.snapshot(1.9e9)
    assert snap.accept_len.v == (3.1, 2.5)
    assert (snap.records, snap.unparsed) == (6, 1)
    assert snap.last_decode is not None and snap.last_decode["gen_throughput"] == 305.0


@pytest.mark.parametrize(("line", "fact", "value"), [
    ("[2026-06-01 11:58:26] Allocating full hierarchical KV host pool: 926000 tokens, 121.38 GB "
     "host memory.", "hicache_host_gb", 121.38),
    ("(EngineCore_DP0 pid=2201) INFO 09-10 12:00:10 [gpu_worker.py:298] Available KV cache memory: "
     "31.50 GiB", "kv_size_gb", 31.5),
    ("INFO 01-13 11:35:23 worker.py:241] model weights take 14.96GiB; non_torch_memory takes "
     "0.10GiB; PyTorch activation peak memory takes 9.37GiB; the rest of the memory reserved for KV "
     "Cache is 4.20GiB.", "kv_size_gb", 4.2),
    ("INFO 03-01 12:00:10 executor_base.py:111] # cuda blocks: 26436, # CPU blocks: 2048",
     "gpu_blocks", 26436),
])
def test_capacity_lines_feed_the_server_facts(line: str, fact: str, value: float) -> None:
    tr = ServerLogTracker()
    tr.feed([parse_line(line, 1)], 1.9e9)
    assert tr.snapshot(1.9e9).facts[fact] == value


def test_the_summary_chart_of_a_long_log_reads_in_hours_and_leaves_a_silence_blank(
        tmp_path: Path) -> None:
    # Ten hours of decode lines every 20 s with the server down from 5 h to 6 h: the x axis
    # read 35883.0 seconds, and the hour of silence was drawn as a ramp joining its two ends.
    lines = []
    for i in range(1800):
        t = 20 * i
        if 5 * 3600 <= t < 6 * 3600:
            continue
        h, m, s = t // 3600, t % 3600 // 60, t % 60
        day = 1 + h // 24
        lines.append(f"[2026-03-0{day} {h % 24:02d}:{m:02d}:{s:02d} TP0] Decode batch, "
                     f"#running-req: 100, #token: 9000, token usage: 0.50, cuda graph: True, "
                     f"gen throughput (token/s): {1317.0 if t >= 6 * 3600 else 606.0}, "
                     f"#queue-req: 0")
    log = tmp_path / "long.log"
    log.write_text("\n".join(lines) + "\n")
    text = render_text(summarize(log), 120)
    assert "(x: hours from first decode)" in text
    rows = [r for r in text.splitlines() if "┤" in r and r.rstrip().endswith("│")]
    plots = [r.split("┤", 1)[1].rstrip()[:-1] for r in rows]
    width = len(plots[0])
    # The silence spans 0.50..0.60 of the axis: its middle is blank in every row.
    assert all(p[int(width * 0.53):int(width * 0.57)].strip() == "" for p in plots)


SGLANG_MFU = ("[2026-06-01 12:00:{s:02d} TP0] Decode batch, #running-req: 32, #token: 41230, "
              "token usage: 0.09, accept len: 2.40, accept rate: {r}, cuda graph: True, gen "
              "throughput (token/s): 2327.27, #queue-req: 0, est. decode TFLOPS/s (per GPU): "
              "{tf}, est. read BW (GB/s per GPU): 810.00, est. write BW (GB/s per GPU): 4.00, "
              "fwd occupancy: {occ}%")


def test_the_tracker_keeps_the_last_estimated_figures_of_each_engine() -> None:
    """vLLM's spec and MFU lines, SGLang's decode line: the last printed value of each; a
    prefill line's TFLOPS (the prefill's) and an occupancy not measured yet (`nan%`) are not."""
    tr = ServerLogTracker("vllm.log")
    tr.feed([parse_line(line, n) for n, line in enumerate(VLLM_LOG.splitlines(), 1)], 1.9e9)
    assert dict(tr.snapshot(1.9e9).perf) == {"accept_rate": 0.5, "tflops_per_gpu": 312.4,
                                            "gbps_per_gpu": 1520.3}
    tr = ServerLogTracker("sglang.log")
    lines = [SGLANG_MFU.format(s=1, r="0.70", tf="12.50", occ="88.00"),
             SGLANG_MFU.format(s=2, r="0.60", tf="14.00", occ="nan"),
             "[2026-06-01 12:00:03 TP0] Prefill batch, #new-seq: 1, #new-token: 512, "
             "#cached-token: 0, token usage: 0.10, #running-req: 31, #queue-req: 0, cuda graph: "
             "False, input throughput (token/s): 2048.00, est. prefill TFLOPS/s (per GPU): 95.00"]
    tr.feed([parse_line(line, n) for n, line in enumerate(lines, 1)], 1.9e9)
    assert dict(tr.snapshot(1.9e9).perf) == {
        "accept_rate": 0.6, "tflops_per_gpu": 14.0, "read_gbps_per_gpu": 810.0,
        "write_gbps_per_gpu": 4.0, "fwd_occupancy": 0.88}
    tr.feed([parse_line("[2026-06-01 12:01:00] server_args=ServerArgs(model_path='m')", 9)],
            1.9e9)
    assert dict(tr.snapshot(1.9e9).perf) == {}  # a new start prints its own


def test_one_event_printed_by_every_rank_is_counted_once(tmp_path: Path) -> None:
    """With TP 8 each rank prints the retraction: one event, as the dashboard folds it; the
    same wording minutes later is another one."""
    line = ("[2026-03-01 02:58:{s:02d} TP{r}] KV cache pool is full. Retract requests. "
            "#retracted_reqs: 2, #new_token_ratio: 0.4000 -> 0.5322")
    lines = [line.format(s=44 + r // 4, r=r) for r in (0, 5, 7, 2, 6)]
    lines.append(line.format(s=59, r=0).replace("02:58:59", "03:10:00"))
    lines.append(line.format(s=59, r=0).replace("02:58:59", "03:10:01"))  # TP0 again: another
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    assert summarize(log)["event_counts"] == {"retract": 3}


@pytest.mark.parametrize(("name", "retractions"), [
    ("sglang-2746-decode-full-kv-retract.log", 1),  # one retraction, by TP0, 5, 7, 2 and 6
    ("sglang-4184-decode-oom-retract-multinode-ranks.log", 2),
])
def test_real_logs_count_each_retraction_once(real_logs: Path, name: str,
                                              retractions: int) -> None:
    doc = summarize(real_logs / name)
    assert doc["event_counts"]["retract"] == retractions
    # listed once each too, with the copies the other ranks printed
    listed = [e for e in doc["events"] if e["event"] == "retract"]
    assert len(listed) == retractions and all(e.get("rank_copies", 0) >= 1 for e in listed)
    text = render_text(doc)
    assert sum(row.startswith("    line") for row in text.splitlines()) == retractions
    assert "ranks) " in text
