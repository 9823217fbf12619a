"""Launches: where a server start begins and ends, what it asked for and reported, how it ended
and what it achieved, read from log lines through the grammar's own parser."""

from __future__ import annotations

import pickle
import re
import time

from dash.core.config import Config
from dash.core.launch import Launch, launch_from_json, launch_to_json
from dash.core.log.parse import parse_line
from dash.core.state.launch_figures import MAX_SAMPLES, MAX_WINDOW_POINTS, FiguresAccumulator
from dash.core.state.launch_merge import NOT_WATCHED
from dash.core.state.launches import LaunchTracker
from dash.core.state.run import RunState

T0 = 1_750_000_000.0


def stamp(t: float) -> str:
    return time.strftime("[%Y-%m-%d %H:%M:%S] ", time.localtime(T0 + t))


def args_line(t: float, mem: float, kv: str = "auto", seed: int = 1) -> str:
    return (f"{stamp(t)}server_args=ServerArgs(model_path='org/Model-7B', tp_size=2, "
            f"mem_fraction_static={mem}, kv_cache_dtype='{kv}', random_seed={seed}, "
            "chunked_prefill_size=8192)")


def startup(t: float, tokens: int, after_graph: float) -> list[str]:
    return [f"{stamp(t + 1)}Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
            "avail mem=63.41 GB, mem usage=15.12 GB.",
            f"{stamp(t + 2)}KV Cache is allocated. #tokens: {tokens}, K size: 28.26 GB, "
            "V size: 28.26 GB",
            f"{stamp(t + 2)}Memory pool end. avail mem=6.31 GB",
            f"{stamp(t + 3)}Capture cuda graph end. Time elapsed: 9.81 s. mem usage=0.7 GB. "
            f"avail mem={after_graph:.2f} GB.",
            f"{stamp(t + 4)}max_total_num_tokens={tokens}, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384, max_running_requests=4096, context_len=131072",
            f"{stamp(t + 5)}The server is fired up and ready to roll!"]


def decode(t: float, gen: float, running: int = 40, queue: int = 3, usage: float = 0.5) -> str:
    return (f"{stamp(t)}Decode batch, #running-req: {running}, #token: 1000, token usage: "
            f"{usage:.2f}, cuda graph: True, gen throughput (token/s): {gen:.2f}, "
            f"#queue-req: {queue}")


def prefill(t: float, new: int, cached: int = 0) -> str:
    return (f"{stamp(t)}Prefill batch, #new-seq: 1, #new-token: {new}, #cached-token: {cached}, "
            "token usage: 0.50, #running-req: 40, #queue-req: 3")


def serving(t0: float, t1: float, gen: float, step: float = 4.0) -> list[str]:
    lines, t = [], t0
    while t < t1:
        lines.append(decode(t, gen + (7 if int(t) % 8 else -7)))
        t += step
    return lines


def read(lines: list[str], tracker: LaunchTracker | None = None,
         finish: bool = True) -> tuple[Launch, ...]:
    tracker = tracker or LaunchTracker()
    tracker.feed([parse_line(text, i + 1) for i, text in enumerate(lines)], None, ref=T0)
    if finish:
        tracker.finish()
    return tracker.launches()


OOM = ["Scheduler hit an exception: Traceback (most recent call last):",
       '  File "/sglang/srt/managers/scheduler.py", line 2713, in run_scheduler_process',
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.73 GiB.",
       "Received sigquit from a child process. It usually means the child failed.",
       "Killed"]


def two_starts() -> list[str]:
    first = [args_line(0, 0.93), *startup(0, 212000, 0.82), *serving(20, 260, 1100),
             prefill(262, 32768), *OOM]
    second = [args_line(300, 0.88), *startup(300, 159277, 5.47), *serving(320, 1000, 980),
              prefill(400, 900, 100)]
    return first + second


def test_two_starts_appended_give_two_launches_with_their_args_capacity_and_outcomes():
    first, second = read(two_starts())
    assert first.args["mem_fraction_static"] == 0.93 and second.args["mem_fraction_static"] == 0.88
    assert first.capacity["max_total_num_tokens"] == 212000
    assert first.capacity["graph_avail_gb"] == 0.82 and second.capacity["graph_avail_gb"] == 5.47
    assert first.capacity["weights_gb"] == 15.12 and first.capacity["pool_avail_gb"] == 6.31
    assert first.capacity["kv_size_gb"] == 56.52
    # The traceback's crash, then its OOM line, SIGQUIT and Killed: one death, of OOM
    assert (first.outcome, first.reason, first.component) == ("oom", "cuda_oom", "Scheduler")
    assert first.ended_at == T0 + 262 and first.duration_s == 262
    assert first.figures.prefill_before_end == 32768
    assert first.figures.steady is None and first.figures.steady_note.startswith("too short")
    assert second.outcome == "log_ended" and second.start_seen
    assert 970 <= second.figures.steady <= 990 and second.figures.steady_s >= 300
    assert second.figures.prefix_hit == 0.1  # 100 cached of 1000 prefill tokens
    assert first.key != second.key and first.start_line == 1


def test_a_launch_too_short_for_a_steady_figure_says_how_much_more_it_needed() -> None:
    # 5m20s of decode lines: more than the 5 min a steady stretch takes, but the first
    # windowed figure comes a window after the first line, so it is still too short; the note
    # must not read "5m20s of decode lines, 5m00s needed".
    (launch,) = read([args_line(0, 0.9), *startup(0, 100000, 4.0), *serving(20, 340, 900)])
    note = launch.figures.steady_note
    assert launch.figures.steady is None and note is not None
    m = re.fullmatch(r"too short: (\d+)m(\d+)s of decode lines, (\d+)m(\d+)s needed", note)
    assert m, note
    had, needed = (int(m[1]) * 60 + int(m[2]), int(m[3]) * 60 + int(m[4]))
    assert had == 316 and needed > had


def test_a_live_log_leaves_the_last_launch_running():
    tracker = LaunchTracker()
    launches = read(two_starts(), tracker, finish=False)
    assert launches[-1].outcome == "running"


def test_a_start_without_arguments_begins_at_its_first_startup_line():
    lines = [*startup(0, 1000, 4.0), *serving(10, 100, 50), *startup(200, 2000, 3.0)]
    first, second = read(lines)
    assert not first.args and first.start_seen and first.started_at == T0 + 1
    assert first.outcome == "stopped" and first.reason == "next start"
    assert second.capacity["max_total_num_tokens"] == 2000


def test_a_log_that_starts_mid_run_has_a_launch_whose_start_was_not_seen():
    (launch,) = read(serving(0, 400, 500))
    assert not launch.start_seen and launch.key.startswith("unseen|")
    assert launch.figures.decode_lines == 100


def test_the_same_arguments_printed_twice_before_serving_are_one_start():
    lines = [args_line(0, 0.9), args_line(1, 0.9), *startup(1, 1000, 4.0), *serving(10, 60, 80)]
    assert len(read(lines)) == 1


def test_a_rewritten_log_ends_the_launch_only_if_a_start_follows():
    tracker = LaunchTracker()
    read([args_line(0, 0.85), *startup(0, 1000, 4.0), *serving(10, 100, 80)], tracker, False)
    tracker.log_rewritten()
    read(serving(104, 200, 80), tracker, False)  # copytruncate: the server writes on
    assert len(tracker.launches()) == 1
    tracker.log_rewritten()
    launches = read([args_line(300, 0.9), *startup(300, 2000, 3.0)], tracker)
    assert [x.outcome for x in launches] == ["stopped", "log_ended"]
    assert launches[0].reason == "log rewritten" and launches[0].ended_at == T0 + 196


def test_a_clean_shutdown_stays_clean_while_the_last_requests_drain():
    lines = [args_line(0, 0.9), *startup(0, 1000, 4.0), *serving(10, 100, 80),
             f"{stamp(100)}SIGTERM received. signum=15 frame=None. Draining requests and "
             "shutting down...", *serving(101, 130, 40)]
    (launch,) = read(lines)
    assert launch.outcome == "shutdown" and launch.ended_at == T0 + 100


def test_a_server_that_decodes_on_a_minute_after_an_oom_survived_it():
    lines = [args_line(0, 0.9), *startup(0, 1000, 4.0), *serving(10, 100, 80),
             f"{stamp(100)}torch.OutOfMemoryError: CUDA out of memory.", *serving(104, 300, 80)]
    (launch,) = read(lines, finish=False)
    assert launch.outcome == "running" and launch.reason == "survived cuda_oom"


def test_one_retraction_printed_by_every_rank_counts_once():
    base = stamp(50).rstrip("] ")
    lines = [args_line(0, 0.9), *startup(0, 1000, 4.0), *serving(10, 100, 80)]
    lines += [f"{base} TP{r}] Decode out of memory happened. #retracted_reqs: 3, "
              "#new_token_ratio: 0.4000 -> 0.5322" for r in range(4)]
    (launch,) = read(lines)
    assert launch.figures.retractions == 1 and launch.figures.retracted_reqs == 3


def test_figures_stay_bounded_over_a_days_long_launch():
    acc = FiguresAccumulator()
    t = 0.0
    for i in range(200_000):  # a line a second for over two days
        acc.decode({"gen_throughput": 600.0 + (i % 7), "running_req": 50, "queue_req": 2,
                    "token_usage": 0.8}, t)
        t += 1.0
    assert len(acc._samples) < MAX_SAMPLES and len(acc._window) <= MAX_WINDOW_POINTS
    figures = acc.figures()
    assert 600 <= figures.steady <= 607 and figures.steady_s > 2 * 86400 - 600
    assert figures.decode_lines == 200_000


def test_a_pause_in_decoding_breaks_a_steady_stretch():
    lines = [args_line(0, 0.9), *startup(0, 1000, 4.0), *serving(10, 200, 80),
             *serving(4000, 4200, 80)]
    (launch,) = read(lines)
    assert launch.figures.steady is None and launch.figures.steady_note.startswith("never")


def test_remembered_launches_merge_with_what_is_read_again():
    earlier = LaunchTracker()
    read(two_starts(), earlier, finish=False)
    saved = [launch_from_json(launch_to_json(x)) for x in earlier.launches()]
    assert all(x is not None and x.earlier for x in saved)
    # A later kdash reads the log again from the second start: the first is remembered only
    later = LaunchTracker()
    later.remember([x for x in saved if x is not None])
    read([args_line(300, 0.88), *startup(300, 159277, 5.47), *serving(320, 600, 980)], later,
         finish=False)
    first, second = later.launches()
    assert first.earlier and first.outcome == "oom"
    assert not second.earlier and second.key == saved[1].key


def test_a_kdash_that_missed_the_start_continues_the_remembered_launch():
    earlier = LaunchTracker()
    read([args_line(0, 0.88), *startup(0, 159277, 5.47), *serving(20, 400, 980)], earlier, False)
    later = LaunchTracker()
    later.remember(earlier.launches())
    read(serving(900, 1400, 990), later, finish=False)  # its backfill starts after the start
    (launch,) = later.launches()
    assert launch.capacity["max_total_num_tokens"] == 159277 and not launch.earlier
    assert launch.last_at == T0 + 1396 and launch.outcome == "running"


def test_a_remembered_running_launch_followed_by_a_new_start_ended_unwatched():
    earlier = LaunchTracker()
    read([args_line(0, 0.88), *startup(0, 1000, 5.0), *serving(20, 400, 980)], earlier, False)
    later = LaunchTracker()
    later.remember(earlier.launches())
    read([args_line(900, 0.9), *startup(900, 2000, 3.0)], later, finish=False)
    first, second = later.launches()
    assert first.outcome == "stopped" and first.reason == NOT_WATCHED


def test_damaged_json_is_no_launch():
    assert launch_from_json({"figures": {}}) is None
    assert launch_from_json("launch") is None
    odd = launch_from_json({"key": "k", "outcome": "exploded", "started_at": "noon",
                            "figures": {"peak": "high", "retractions": 2.5}})
    assert odd is not None and odd.outcome == "stopped" and odd.started_at is None
    assert odd.figures.peak is None and odd.figures.retractions == 0


def test_run_state_with_launches_pickles_for_replay_checkpoints():
    state = RunState(Config())
    state.feed_server_log([parse_line(x) for x in two_starts()], T0 + 2000)
    state.snapshot(T0 + 2000)
    copy = pickle.loads(pickle.dumps(state))
    assert [x.key for x in copy.launches.launches()] == [x.key for x in state.launches.launches()]


def test_run_state_splits_a_read_at_the_rewrite():
    state = RunState(Config())
    lines = [args_line(0, 0.85), *startup(0, 1000, 4.0), *serving(10, 100, 80),
             args_line(300, 0.9), *startup(300, 2000, 3.0)]
    cut = lines.index(args_line(300, 0.9))
    state.feed_server_log([parse_line(x) for x in lines], T0 + 400, rewritten=(cut,))
    first, second = state.snapshot(T0 + 400).launches
    assert first.reason == "log rewritten" and second.outcome == "running"


def test_dp_ranks_figures_are_the_whole_servers_sums():
    lines = [args_line(0, 0.9), *startup(0, 1000, 4.0)]
    for i in range(150):  # 4 DP ranks, each printing its own line every 4 s at ~250 tok/s
        t = 10 + 4 * i
        base = stamp(t).rstrip("] ")
        lines += [f"{base} DP{r} TP{r} EP{r}] Decode batch, #running-req: 10, #token: 100, "
                  f"token usage: 0.{40 + r}, cuda graph: True, gen throughput (token/s): "
                  f"{250 + r:.2f}, #queue-req: 1" for r in range(4)]
    (launch,) = read(lines)
    f = launch.figures
    assert 1000 <= f.steady <= 1006 and f.running == 40 and f.queued == 4
    assert f.usage == 0.43  # the rank that runs out first
    assert f.peak_line == 1006.0  # at one line, the whole server's: the dashboard's peak


def test_vllm_v1s_preemptions_on_its_stats_line_are_retractions() -> None:
    """vLLM V1 prints no line per preemption, only `Preemptions: N` on the stats line of an
    interval that had some: its launches said `retractions 0` and no alert ever fired."""
    from dash.core.state.run import replay_alerts

    def v1(t: float, preempted: int) -> str:
        when = time.strftime("%m-%d %H:%M:%S", time.localtime(T0 + t))
        return (f"(APIServer pid=1) INFO {when} [loggers.py:335] Engine 000: Avg prompt "
                "throughput: 100.0 tokens/s, Avg generation throughput: 1000.0 tokens/s, Running: "
                f"64 reqs, Waiting: 12 reqs, "
                + (f"Preemptions: {preempted}, " if preempted else "")
                + "GPU KV cache usage: 99.2%, Prefix cache hit rate: 42.1%")

    lines = [v1(10 * i, [0, 5, 7, 0, 2][i % 5]) for i in range(10)]
    (launch,) = read(lines)
    assert (launch.figures.retractions, launch.figures.retracted_reqs) == (6, 28)
    records = [parse_line(text, i + 1) for i, text in enumerate(lines)]
    fired = {a.id: a for a in replay_alerts(records)}
    assert "retractions" in fired and "requests retracted" in fired["retractions"].message


def test_the_table_says_how_long_each_start_took_to_be_ready() -> None:
    """A flag's cost at every restart (graph capture sizes, compile, a host cache): from the
    arguments line to the ready banner; `-` for a start whose arguments line is not in the log."""
    from dash.core.views.launch_table import table

    lines = [args_line(0, 0.88), *startup(0, 463000, 5.59), *serving(10, 200, 2000.0),
             args_line(300, 0.85), *startup(400, 400000, 6.0), *serving(410, 600, 1900.0)]
    launches = read(lines)
    rows = {row.label: [c.text for c in row.cells] for row in table(launches)}
    assert rows["ready after"] == ["5s", "1m45s"]
    late = read(lines[1:7])  # the log begins after the arguments line
    assert "ready after" not in {row.label for row in table(late)}


def test_a_crash_whose_traceback_ends_in_a_cuda_error_says_so() -> None:
    """`Scheduler hit an exception:` opens the traceback; its last line is the cause: the
    launch died of an illegal memory access (a RuntimeError), not of 'exception'."""
    iam = ["Scheduler hit an exception: Traceback (most recent call last):",
           '  File "/sglang/srt/managers/scheduler.py", line 9, in event_loop_overlap',
           "RuntimeError: CUDA error: an illegal memory access was encountered",
           "Received sigquit from a child process. It usually means the child failed.", "Killed"]
    [launch] = read([args_line(0, 0.9), *serving(20, 100, 900), *iam])
    assert (launch.outcome, launch.reason, launch.exception) == (
        "crash", "illegal_memory_access", "RuntimeError")


def test_a_launch_too_short_for_a_windowed_figure_gives_its_lines_levels() -> None:
    """Seven decode lines (sglang-11948): no steady figure, but the running, queued and usage
    they print are the launch's, not `-`."""
    lines = [args_line(0, 0.9), *(decode(1 + 0.5 * i, 190.0) for i in range(4))]
    [launch] = read(lines)
    f = launch.figures
    assert f.steady is None and (f.running, f.queued, f.usage) == (40.0, 3.0, 0.5)


def test_a_kv_cache_that_grows_while_it_serves_opens_no_launch() -> None:
    """vLLM 0.34's extensible KV cache: `Extended KV cache to N blocks` after stats lines is
    the open launch's size, not a new start."""
    grown = "(EngineCore pid=4300) INFO 01-10 10:05:00 [extensible_kv_cache.py:537] Extended KV cache to 3000 blocks (11.72 GiB)."
    [launch] = read([args_line(0, 0.9), *serving(20, 100, 900), grown, *serving(110, 150, 900)])
    assert (launch.capacity["kv_size_gb"], launch.capacity["gpu_blocks"]) == (11.72, 3000)


def test_a_crash_lines_generic_type_does_not_replace_the_causes() -> None:
    worker = "(Worker_TP1 pid=2301) ERROR 01-10 10:02:00 [multiproc_executor.py:700] "
    [launch] = read([args_line(0, 0.9), worker + "ValueError: bad quantization config",
                     "(APIServer pid=4100) RuntimeError: Engine core initialization failed. See "
                     "root cause above. Failed core proc(s): {'EngineCore_DP0': 1}"])
    assert (launch.outcome, launch.exception) == ("crash", "ValueError")
