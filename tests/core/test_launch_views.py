"""The launches compared: the table's rows and marks, the advice in words, the one-line summary
of the server panel and the JSON, on launches built field by field."""

from __future__ import annotations

import json

from dash.core.launch import Launch, LaunchFigures
from dash.core.views.launch_advice import advice, changes, compact, launches_json, server_line
from dash.core.views.launch_table import MARK, table
from dash.core.views.launch_text import layout, render

T0 = 1_750_000_000.0
SGLANG = {"model_path": "deepseek-ai/DeepSeek-V3", "tp_size": 8, "dp_size": 1,
          "mem_fraction_static": 0.88, "kv_cache_dtype": "auto", "enable_hierarchical_cache": True,
          "hicache_size": 48, "hicache_ratio": 2.0, "chunked_prefill_size": 8192,
          "random_seed": 1, "speculative_algorithm": None, "enable_dp_attention": False}


def launch(n: int, args: dict, *, tokens: int | None = None, graph: float | None = None,
           outcome: str = "shutdown", steady: float | None = None, note: str | None = None,
           ran: float = 1200.0, prefill_end: int | None = None, kv_dtype: str | None = None,
           **extra) -> Launch:
    cap = {k: v for k, v in (("max_total_num_tokens", tokens), ("graph_avail_gb", graph),
                              ("kv_dtype", kv_dtype)) if v is not None}
    start = T0 + 3600 * n
    return Launch(key=f"k{n}", started_at=start, start_ts="x", last_at=start + ran,
                  ended_at=None if outcome == "running" else start + ran, outcome=outcome,
                  args=args, capacity=cap, reason=extra.get("reason"),
                  figures=LaunchFigures(steady=steady, steady_note=note, decode_lines=100,
                                        peak=extra.get("peak"), prefill_before_end=prefill_end))


def story() -> list[Launch]:
    a = {**SGLANG, "mem_fraction_static": 0.85, "hicache_size": 0,
         "enable_hierarchical_cache": False}
    b = {**a, "mem_fraction_static": 0.93, "random_seed": 2}
    c = {**SGLANG, "random_seed": 3}
    d = {**SGLANG, "mem_fraction_static": 0.9, "kv_cache_dtype": "fp8_e4m3", "random_seed": 4}
    too_short = "too short: 3m47s of decode lines, 5m00s needed"
    return [launch(0, a, tokens=116171, graph=8.34, steady=850.0, kv_dtype="bf16"),
            launch(1, b, tokens=212000, graph=0.82, outcome="oom", ran=250.0, note=too_short,
                   prefill_end=32768, reason="cuda_oom", kv_dtype="bf16"),
            launch(2, c, tokens=159277, graph=5.47, steady=606.0, peak=1317.0, kv_dtype="bf16"),
            launch(3, d, tokens=376029, graph=3.52, steady=1050.0, outcome="running",
                   kv_dtype="fp8_e4m3")]


def rows_by_label(launches: list[Launch]) -> dict[str, list[tuple[str, bool]]]:
    return {r.label: [(c.text, c.changed) for c in r.cells] for r in table(launches)}


def test_changed_arguments_are_marked_and_noise_is_left_out():
    rows = rows_by_label(story())
    assert rows["mem fraction"] == [("0.85", False), ("0.93", True), ("0.88", True),
                                    ("0.90", True)]
    assert rows["kv dtype"] == [("bf16", False), ("bf16", False), ("bf16", False),
                                ("fp8_e4m3", True)]  # `auto` shows what the KV pool got
    assert rows["hicache"] == [("off", False), ("off", False), ("48 GB", True), ("48 GB", False)]
    assert "random_seed" not in rows  # SGLang draws one at every start
    assert "spec algorithm" not in rows and "dp attention" not in rows  # off in all
    assert rows["KV tokens"][3] == ("376,029", False)
    assert rows["outcome"][1] == ("OOM 4m10s in", False)
    assert rows["steady tok/s"] == [("850", False), ("too short", False), ("606", False),
                                    ("1,050", False)]


def test_an_argument_outside_the_known_ones_that_differs_gets_its_own_row():
    a = {**SGLANG, "schedule_policy": "fcfs"}
    rows = rows_by_label([launch(0, a), launch(1, {**a, "schedule_policy": "lpm"})])
    assert rows["schedule_policy"] == [("fcfs", False), ("lpm", True)]


def test_vllm_arguments_are_read_by_their_own_names():
    a = {"model": "meta-llama/Llama-3.1-8B", "tensor_parallel_size": 4,
         "gpu_memory_utilization": 0.9, "max_num_seqs": 256,
         "speculative_config": {"method": "eagle", "num_speculative_tokens": 3}}
    b = {**a, "gpu_memory_utilization": 0.95}
    rows = rows_by_label([launch(0, a), launch(1, b)])
    assert rows["model"][0] == ("Llama-3.1-8B", False)
    assert rows["mem fraction"] == [("0.90", False), ("0.95", True)]
    assert rows["tp size"][0] == ("4", False) and rows["max running"][1] == ("256", False)
    assert rows["spec algorithm"][0] == ("eagle", False)
    assert rows["draft tokens"][0] == ("3", False)


def test_advice_says_what_each_change_did_and_where_figures_are_missing():
    words = advice(story())
    assert words[0] == "#1: steady 850 tok/s"
    assert words[1] == ("#2 (mem 0.85 -> 0.93): 1.82x KV tokens (116K -> 212K); left 0.82 GB "
                        "after CUDA graph capture (was 8.34) and died of OOM 4 min in under "
                        "prefills of up to 32K tokens; no steady figure (too short: 3m47s of "
                        "decode lines, 5m00s needed)")
    assert "steady 606 tok/s (peak 1,317); #2 gave no steady figure to compare" in words[2]
    assert words[3].startswith("#4 (mem 0.88 -> 0.90, kv bf16 -> fp8_e4m3): 2.36x KV tokens "
                               "(159K -> 376K)")
    assert words[3].endswith("steady throughput +73% (606 -> 1,050 tok/s)")


def test_a_current_launch_not_yet_steady_says_so():
    launches = story()
    launches[3] = launch(3, launches[3].args, tokens=376029, outcome="running",
                         note="too short: 2m00s of decode lines, 5m00s needed")
    assert "not steady yet (too short" in advice(launches)[3]
    assert server_line(launches).endswith("steady 606 -> not yet")


def test_the_server_line_compares_the_current_launch_with_the_one_before():
    assert server_line(story()) == ("launch 4 of 4; previous: mem 0.88 -> 0.90, kv bf16 -> "
                                    "fp8_e4m3; KV tokens 159K -> 376K; steady 606 -> 1,050")
    assert server_line(story()[:1]) == "launch 1 of 1"
    assert server_line([]) is None


def test_changes_need_arguments_on_both_sides():
    assert changes(launch(0, {}), story()[0]) == []


def test_compact_counts():
    assert (compact(159277), compact(32768), compact(2795207), compact(900)) == \
        ("159K", "32K", "2.8M", "900")


def test_json_lists_every_launch_with_what_changed_and_its_advice():
    docs = launches_json(story())
    json.dumps(docs)  # plain JSON
    assert [d["number"] for d in docs] == [1, 2, 3, 4]
    assert docs[1]["changed"] == {"mem": ["0.85", "0.93"]}
    assert docs[1]["outcome"] == "oom" and docs[1]["outcome_text"] == "OOM 4m10s in"
    assert docs[3]["capacity"]["max_total_num_tokens"] == 376029
    assert docs[3]["figures"]["steady"] == 1050.0 and docs[3]["duration_s"] == 1200.0


def test_plain_table_marks_changes_without_colour_and_fits_80_columns():
    text = render(story(), 80)
    assert all(len(line) <= 80 for line in text.splitlines()[:-5])
    mem = next(line for line in text.splitlines() if "mem fraction" in line)
    assert mem.split() == ["mem", "fraction", "0.85", f"{MARK}0.93", f"{MARK}0.88", f"{MARK}0.90"]
    assert f"{MARK} changed from the launch before" in text


def test_columns_that_do_not_fit_are_left_out_from_the_oldest():
    launches = story() * 3
    rows = table(launches)
    lay = layout(rows, launches, 80)
    assert lay.last == len(launches) - 1 and lay.first > 0
    earlier = layout(rows, launches, 80, last=3)
    assert earlier.last == 3 and earlier.first == 0
    assert "left out" in render(launches, 80)
