"""`server_crash` names the exception a crash came with: hand-made logs read by the real
parser, replayed by the real rules (the same path `summary` and `replay` take)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dash.core.alerts.rules_crash import crash_cause
from dash.core.log.parse import parse_line
from dash.core.snapshot import Alert
from dash.core.state.run import replay_alerts

DAY = "2026-03-02"
_ARGS = f"[{DAY} 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)"
_READY = f"[{DAY} 10:00:30] The server is fired up and ready to roll!"
_DECODE = (f"[{DAY} 10:0{{m}}:00 TP0] Decode batch. #running-req: 8, #token: 900, token usage: "
           "0.10, gen throughput (token/s): 300.00, #queue-req: 0, ")
_SIGQUIT = f"[{DAY} 10:05:00] Received sigquit from a child process. It usually means the child failed."
_ATTR = ("AttributeError: module 'sglang.srt.layers.quantization.deep_gemm_wrapper' has no "
         "attribute 'get_col_major_tma_aligned_tensor'")


def _fired(*lines: str) -> dict[str, Alert]:
    records = [parse_line(text, i + 1) for i, text in enumerate(lines)]
    return {a.id: a for a in replay_alerts(records)}


def _assert_named(crash: Alert, name: str, line: int) -> None:
    assert crash.message.startswith(f"server crashed: {name}; ")
    assert f"(line {line}); then " in crash.evidence
    assert crash.line is not None and crash.line.startswith(f"{name}:")
    assert crash.hint.startswith(f"Fix the {name} ")
    assert "`Killed` alone" not in crash.hint and "OOM killer" not in crash.message


@pytest.mark.parametrize("marker", [_SIGQUIT, "Killed", "run.sh: line 3: 4242 Killed  python",
                                    f"[{DAY} 10:05:00] Subprocess scheduler_0 (pid=41) crashed "
                                    "with exit code -9."])
def test_an_exception_before_a_crash_marker_is_its_cause(marker: str) -> None:
    crash = _fired(_ARGS, _READY, _DECODE.format(m=1), "Traceback (most recent call last):",
                   '  File "/sgl/scheduler.py", line 9, in run', _ATTR, "", marker,
                   "Killed")["server_crash"]
    _assert_named(crash, "AttributeError", 6)
    assert crash.evidence.startswith(f"`{_ATTR[:99]}…` at about {DAY}T10:01:00 (line 6)")
    assert "mismatched package versions" in crash.hint  # a module without the name asked for
    assert "the server was killed" in crash.message or "Killed" not in marker


def test_the_traceback_a_crash_line_opens_ends_in_its_cause() -> None:
    """SGLang's `Scheduler hit an exception: <traceback>`: the exception comes after it."""
    crash = _fired(_ARGS, _READY, _DECODE.format(m=1),
                   f"[{DAY} 10:04:00] Scheduler hit an exception: Traceback (most recent call "
                   "last):", '  File "/sgl/scheduler.py", line 9, in event_loop',
                   "ValueError: prompt too long")["server_crash"]
    _assert_named(crash, "ValueError", 6)
    assert "Scheduler hit an exception" in crash.message
    assert "mismatched package versions" not in crash.hint


def test_a_dotted_type_is_named_without_its_module_and_a_long_line_is_cut() -> None:
    long = "torch._dynamo.exc.InternalTorchDynamoError: " + "x" * 400
    crash = _fired(_ARGS, long, _SIGQUIT)["server_crash"]
    assert crash.message.startswith("server crashed: InternalTorchDynamoError; ")
    quote = crash.evidence.split("` ")[0]
    assert len(quote) == 101 and quote.endswith("…")  # a backquote and 100 characters
    assert crash.line == long  # the alert's line keeps it whole


def test_a_crash_with_no_exception_keeps_the_generic_wording() -> None:
    crash = _fired(_ARGS, _READY, _DECODE.format(m=1), _SIGQUIT, "Killed")["server_crash"]
    assert crash.message == ("server crashed: a server process failed (SIGQUIT); the server was "
                             "killed (often the kernel's OOM killer)")
    assert crash.evidence.startswith("2 crash line(s), first at ")
    assert "`Killed` alone usually means host RAM ran out" in crash.hint
    assert crash.line is not None and crash.line.startswith("Received sigquit")


@pytest.mark.parametrize("after_oom", [[], ["RuntimeError: the worker failed"]])
def test_an_oom_keeps_priority_over_the_exception(after_oom: list[str]) -> None:
    """The OOM is the launch's root cause and has its own alert: the crash names no other."""
    fired = _fired(_ARGS, _READY, _DECODE.format(m=1), "ValueError: an earlier, handled error",
                   f"[{DAY} 10:04:00] Scheduler hit an exception: Traceback (most recent call "
                   "last):", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                   "4.00 GiB.", *after_oom, _SIGQUIT)
    assert "out of memory" in (fired["server_oom"].line or "")
    crash = fired["server_crash"]
    assert "Error" not in crash.message and not crash.hint.startswith("Fix the")


def test_an_exception_of_the_launch_before_is_not_blamed() -> None:
    fired = _fired(_ARGS, _READY, _DECODE.format(m=1), _ATTR,
                   _ARGS.replace("10:00:00", "10:02:00"), _READY.replace("10:00:30", "10:02:30"),
                   _DECODE.format(m=3), _SIGQUIT)
    assert "server_restarted" in fired
    crash = fired["server_crash"]
    assert crash.message == "server crashed: a server process failed (SIGQUIT)"
    assert "`Killed` alone" in crash.hint


def test_an_exception_the_server_worked_on_after_is_not_blamed() -> None:
    """A request's error the server logged and went on decoding after: not what killed it."""
    crash = _fired(_ARGS, _READY, _DECODE.format(m=1), "KeyError: 'rid-7'",
                   _DECODE.format(m=2), _DECODE.format(m=3), "Killed")["server_crash"]
    assert crash.message == "server crashed: the server was killed (often the kernel's OOM killer)"


def test_a_stop_is_no_fault_and_unnumbered_lines_still_count() -> None:
    """`KeyboardInterrupt` ends a server on purpose; a line of unknown number is not ruled
    out by a stats line."""
    stop = {"kind": "event", "event": "error", "exception": "KeyboardInterrupt", "line": 5}
    crash = {"kind": "event", "event": "crash", "reason": "killed", "line": 6}
    assert crash_cause([stop, crash], 4) is None
    error = {"kind": "event", "event": "error", "exception": "OSError", "line": None}
    assert crash_cause([error, crash], 40) is error
    assert crash_cause([error], 40) is None  # no crash line: an error, not a crash's cause


def test_an_exception_before_the_next_launchs_arguments_is_not_blamed() -> None:
    """A start that failed before it served is no restart the tracker counts; its arguments
    line still begins another launch."""
    fired = _fired(_ARGS, _ATTR, _ARGS.replace("10:00:00", "10:02:00"), "Killed")
    assert fired["server_crash"].message == ("server crashed: the server was killed (often "
                                             "the kernel's OOM killer)")


def test_a_crash_line_that_opens_a_traceback_points_below_it() -> None:
    """`Scheduler hit an exception: Traceback ...` and vLLM's `Exception in worker ... while
    processing method load_model.` come before their traceback: while its last line (the
    exception) is not there yet, or was cut off, the hint must send the reader down, not up."""
    crash = _fired(_ARGS, _READY, _DECODE.format(m=1),
                   f"[{DAY} 10:04:00] Scheduler hit an exception: Traceback (most recent call "
                   "last):", '  File "/sgl/scheduler.py", line 9, in event_loop')["server_crash"]
    assert crash.hint.startswith("Read the traceback below this line in the server log")
    generic = _fired(_ARGS, _READY, _DECODE.format(m=1), _SIGQUIT)["server_crash"]
    assert generic.hint.startswith("Read the traceback above this line in the server log")


def test_the_vllm_worker_exception_of_a_real_log_points_below_it(real_logs: Path) -> None:
    text = (real_logs / "vllm-ascend-issue616-caret-notation-ansi-and-cr.log").read_text()
    records = [parse_line(line, i + 1) for i, line in enumerate(text.splitlines())]
    crash = {a.id: a for a in replay_alerts(records)}["server_crash"]
    assert crash.line is not None and crash.line.startswith("Exception in worker")
    assert "below this line" in crash.hint and "above" not in crash.hint


@pytest.mark.parametrize("typed", [True, False])
def test_a_sigquit_printed_the_moment_before_the_childs_crash_is_not_its_cause(typed: bool) -> None:
    """sglang#19781, #8864: the parent's `Received sigquit` comes first, in the same second as
    the child's `Scheduler hit an exception`; the alert and the launch named SIGQUIT."""
    from dash.core.state.launches import LaunchTracker

    lines = [_ARGS, _READY, _DECODE.format(m=1), _SIGQUIT,
             f"[{DAY} 10:05:00 TP3] Scheduler hit an exception: Traceback (most recent call last):",
             '  File "/sgl/scheduler.py", line 3130, in run_scheduler_process',
             *([_ATTR] if typed else [])]
    crash = _fired(*lines)["server_crash"]
    assert crash.message.startswith("server crashed: " + ("AttributeError; " if typed else "")
                                    + "Scheduler hit an exception; a server process failed")
    tracker = LaunchTracker()
    tracker.feed([r for r in (parse_line(t, i + 1) for i, t in enumerate(lines)) if r], None,
                 ref=0.0)
    tracker.finish()
    assert tracker.launches()[-1].reason == "exception"
