"""Launch detection on the real logs in ../shared/real-logs, and on real startups behind each
form of the arguments line.

The real logs carry no arguments line (their excerpts start later), so each form is put in
front of a real startup as its version prints it (reference/log-formats.md section 5.1 and the
notes' section 9): SGLang's `server_args=ServerArgs(...)` and `server_args={...}`, vLLM's
`non-default args: {...}` and `args: Namespace(...)`. Capacity figures are checked against the
hand-read values in expected-prefill-events-v2.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dash.commands.launches import launches_of, read_launches
from dash.core.views.launch_table import table
from dash.core.views.launch_text import render

GROK = "sglang-grok2-blog-v052rc2-tp8-startup-to-decode.log"
VLLM = "vllm-12330-startup-kv-cache-memory-profile.log"
SMALLEST_GRAPH = {"sglang-12978-capture-end-interleaved-userwarning.log": 11.17}
"""The notes of that file: TP1's capture line says 11.22 GB, TP0's 11.17; a launch keeps the
smallest (the GPU that runs out first)."""

ARGS_FORMS = {
    "ServerArgs": (GROK, "[2025-09-11 10:25:20] server_args=ServerArgs(model_path='xai-org/grok-2'"
                         ", tokenizer_path='xai-org/grok-2', tp_size=8, mem_fraction_static={mem}"
                         ", kv_cache_dtype='auto', chunked_prefill_size=8192, random_seed=7)"),
    "dict": (GROK, "[2025-09-11 10:25:20] server_args={{'model_path': 'xai-org/grok-2', "
                   "'tp_size': 8, 'mem_fraction_static': {mem}, 'kv_cache_dtype': 'auto', "
                   "'chunked_prefill_size': 8192, 'random_seed': 7}}"),
    "non-default args": (VLLM, "INFO 01-13 11:35:10 [utils.py:326] non-default args: {{'model': "
                               "'meta-llama/Llama-3.1-8B-Instruct', 'tensor_parallel_size': 2, "
                               "'gpu_memory_utilization': {mem}}}"),
    "Namespace": (VLLM, "INFO 01-13 11:35:10 api_server.py:712] args: Namespace(host=None, "
                        "port=8000, model='meta-llama/Llama-3.1-8B-Instruct', "
                        "tensor_parallel_size=2, gpu_memory_utilization={mem}, max_num_seqs=256)"),
}


def _expected(real_logs: Path) -> dict[str, dict[str, object]]:
    doc = json.loads((real_logs / "expected-prefill-events-v2.json").read_text())
    return {name: entry["events"] for name, entry in doc.items()}


def test_every_real_log_reads_as_launches(real_logs: Path) -> None:
    for path in sorted(real_logs.glob("*.log")):
        launches = read_launches(path)
        assert len(launches) == 1, path.name  # each excerpt holds (part of) one start
        assert launches[0].outcome in ("log_ended", "oom", "crash"), path.name


def test_startups_are_seen_with_the_capacity_the_server_reported(real_logs: Path) -> None:
    checked = 0
    for name, events in _expected(real_logs).items():
        tokens = events["max_total_num_tokens"] or events["kv_cache_tokens"]
        graph = events["cuda_graph_avail_mem_gb"]
        if tokens is None and graph is None:
            continue
        (launch,) = read_launches(real_logs / name)
        assert launch.start_seen, name  # its first startup line begins it
        assert launch.capacity.get("max_total_num_tokens") == tokens, name
        assert launch.capacity.get("graph_avail_gb") == SMALLEST_GRAPH.get(name, graph), name
        checked += 1
    assert checked >= 5


def test_failures_in_real_logs_end_their_launch(real_logs: Path) -> None:
    for name, events in _expected(real_logs).items():
        (launch,) = read_launches(real_logs / name)
        if events["oom"]:
            assert launch.outcome == "oom" and launch.reason, name
        elif events["sigquit"]:
            assert launch.outcome == "crash", name


def test_a_log_that_begins_mid_run_has_a_launch_whose_start_was_not_seen(real_logs: Path) -> None:
    (launch,) = read_launches(real_logs / "sglang-4407-decode-largest-len-trailing-comma.log")
    assert not launch.start_seen and launch.figures.decode_lines == 7


def test_a_start_time_that_is_only_a_lower_bound_is_marked_and_the_mark_explained(
        real_logs: Path) -> None:
    path = real_logs / "sglang-4407-decode-largest-len-trailing-comma.log"
    text = render(launches_of((path,)), width=120)
    start = next(line for line in text.splitlines() if line.startswith("start "))
    assert start.split()[1].startswith("<")
    assert "< started before the log's first line" in text
    assert "< started" not in render(launches_of((real_logs / GROK,)), width=120)  # its start is in the log


@pytest.mark.parametrize("form", ARGS_FORMS)
def test_each_arguments_form_begins_a_launch_with_its_arguments(real_logs: Path, tmp_path: Path,
                                                                form: str) -> None:
    startup, line = ARGS_FORMS[form]
    real = (real_logs / startup).read_text(encoding="utf-8")
    logs = []
    for i, mem in enumerate((0.85, 0.9)):
        path = tmp_path / f"{i}.log"
        path.write_text(line.format(mem=mem) + "\n" + real, encoding="utf-8")
        logs.append(path)
    (launch,) = read_launches(logs[0])
    assert launch.start_seen and launch.start_line == 1
    assert launch.args.get("mem_fraction_static", launch.args.get("gpu_memory_utilization")) == 0.85
    rows = {r.label: [c.text for c in r.cells] for r in table((launch,))}
    assert rows["mem fraction"] == ["0.85"]
    assert rows["tp size"] == ["8" if startup == GROK else "2"]
    if startup == GROK:  # the real startup's capacity, in the launch its arguments began
        assert launch.capacity["max_total_num_tokens"] == 903439
        assert launch.capacity["graph_avail_gb"] == 10.26
    else:
        assert launch.capacity["kv_size_gb"] == 11.12 and launch.capacity["gpu_blocks"] == 5691
    # The same start with another fraction, appended: two launches, the change marked
    both = tmp_path / "both.log"
    both.write_text(logs[0].read_text() + logs[1].read_text())
    rows = {r.label: [(c.text, c.changed) for c in r.cells] for r in table(launches_of([both]))}
    assert rows["mem fraction"] == [("0.85", False), ("0.90", True)]


def test_a_launch_begun_before_the_log_claims_no_duration_it_cannot_know(
        real_logs: Path) -> None:
    # The log is one OOM traceback: the start is not in it, so neither is how long it ran.
    (oom,) = launches_of((real_logs / "vllm-9290-oom-engine-error-traceback.log",))
    rows = {r.label: [c.text for c in r.cells] for r in table((oom,))}
    assert rows["ran"] == ["-"] and rows["outcome"] == ["OOM"]
    assert "died of OOM;" in render((oom,), width=120) and " 0 s in" not in render((oom,), 120)
    (mid,) = launches_of((real_logs / "sglang-4407-decode-largest-len-trailing-comma.log",))
    ran = {r.label: [c.text for c in r.cells] for r in table((mid,))}["ran"]
    assert ran[0].startswith(">")  # it ran at least as long as the log shows


def test_the_top_line_of_a_log_without_stamps_is_its_highest_line(real_logs: Path,
                                                                  tmp_path: Path) -> None:
    """sglang#938's one decode line has no stamp: `launches` counted it and left its 1,397.13
    tok/s out (`top line tok/s -`), where `--once` and `summary` give it; the highest line needs
    no time. With stamps, the same lines give the same figure."""
    (launch,) = read_launches(real_logs / "sglang-938-decode-no-prefix-single-line.log")
    assert launch.figures.decode_lines == 1 and launch.figures.peak_line == 1397.13
    bare = ("Decode batch. #running-req: 8, #token: 900, token usage: 0.10, "
            "gen throughput (token/s): {gen:.2f}, #queue-req: 0\n")
    log = tmp_path / "bare.log"
    log.write_text("".join(bare.format(gen=g) for g in (300.0, 512.5, 410.0)))
    (launch,) = read_launches(log)
    assert launch.figures.decode_lines == 3 and launch.figures.peak_line == 512.5


def test_a_crash_names_the_exception_it_came_with_as_the_alert_does(real_logs: Path,
                                                                   tmp_path: Path) -> None:
    """sglang#9780: `AttributeError: module ... has no attribute ...`, then SIGQUIT and `Killed`.
    `server_crash` says `server crashed: AttributeError`; `launches` said `crashed (sigquit)`,
    the marker, not the cause."""
    path = real_logs / "sglang-9780-crash-tail-sigquit-killed.log"
    (launch,) = read_launches(path)
    assert (launch.outcome, launch.exception, launch.reason) == ("crash", "AttributeError", "sigquit")
    assert "crashed (AttributeError; sigquit)" in render(launches_of((path,)), width=120)
    day = "2026-03-02"
    decode = (f"[{day} 10:02:00 TP0] Decode batch. #running-req: 8, #token: 900, token usage: "
              "0.10, gen throughput (token/s): 300.00, #queue-req: 0, ")
    sigquit = f"[{day} 10:05:00] Received sigquit from a child process. It usually means the child failed."
    cases = {  # the log's lines -> the exception the crash is named after
        "worked on after it": (["ValueError: a bad request", decode, sigquit], None),
        "opens its traceback": ([decode, f"[{day} 10:04:00] Scheduler hit an exception: Traceback "
                                 "(most recent call last):", '  File "/sgl/s.py", line 9, in loop',
                                 "vllm.v1.engine.exceptions.EngineGenerateError: prompt too long"],
                                "EngineGenerateError"),
    }
    for name, (lines, want) in cases.items():
        log = tmp_path / f"{name.replace(' ', '_')}.log"
        log.write_text("\n".join(lines) + "\n")
        (launch,) = read_launches(log)
        assert launch.outcome == "crash" and launch.exception == want, name
    from dash.core.launch import launch_from_json, launch_to_json
    back = launch_from_json(json.loads(json.dumps(launch_to_json(launch))))
    assert back is not None and back.exception == "EngineGenerateError"  # remembered as it was


def test_a_launch_whose_start_is_not_in_its_log_is_placed_by_its_lines(real_logs: Path) -> None:
    """sglang#9780 begins mid-run (lines of 2025-08-29), grok2 starts 2025-09-11: the launch
    whose start is not in its log came first, and was listed last (no start time, sorted after
    every other)."""
    logs = (real_logs / "sglang-grok2-blog-v052rc2-tp8-startup-to-decode.log",
            real_logs / "sglang-9780-crash-tail-sigquit-killed.log")
    first, second = launches_of(logs)
    assert first.started_at is None and not first.start_seen
    assert first.source is not None and "9780" in first.source
    assert second.started_at is not None and first.order < second.order


def test_summary_counts_the_launches_that_kdash_launches_reads(real_logs: Path) -> None:
    """`summary` replays a thinned stream; a log of prefill lines only (no decode line to
    replay, no start printed) still ran one launch, from its first line to its last."""
    from dash.commands.summary import summarize

    prefill_only = 0
    for path in sorted(real_logs.glob("*.log")):
        doc = summarize(path)
        if not doc["records"]["decode"] and doc["records"]["prefill"]:
            prefill_only += 1
        launches = read_launches(path)
        assert len(doc["launches"]) == len(launches), path.name
        assert [d["start_ts"] for d in doc["launches"]] == [la.start_ts for la in launches]
    assert prefill_only >= 2
