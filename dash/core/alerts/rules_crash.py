"""The crash rule: what a server's crash lines say happened, and the exception it died of.

A crash marker (`Received sigquit from a child process`, `Killed`, `EngineDeadError ... see
stack trace above`) says that a process ended, seldom why: the why is the Python exception
line the traceback ends with, printed just before (or after the `Scheduler hit an exception:`
line that opens the traceback). The alert names that exception, quotes it, and says to fix it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from dash.core.alerts.model import Finding, RuleContext, text_of, where
from dash.core.linenums import line_order
from dash.core.snapshot import Record

_CRASH_TEXT = {
    "exception": "the scheduler hit an exception",
    "watchdog": "watchdog timeout: the scheduler hung",
    "sigquit": "a server process failed (SIGQUIT)",
    "killed": "the server was killed (often the kernel's OOM killer)",
    # the `reason` of the log's other failure families (dash.core.log.phrases)
    "nccl_timeout": "a collective (NCCL) timed out: a rank hung or died",
    "nccl_error": "a collective (NCCL) failed",
    "nccl_hang": "a collective (NCCL) hung and its watchdog ended the process",
    "unhealthy": "the server was stopped while its health check failed (it had stopped answering)",
    "port_in_use": "its port is taken by another process",
    "device_assert": "a CUDA kernel's device-side assert fired (often an index out of range)",
    "illegal_memory_access": "a CUDA kernel accessed memory out of bounds",
    "cuda_error": "a CUDA error lost the GPU context",
    "engine_dead": "the engine process died",
    "init_failed": "the server failed to start",
    "process_died": "a server process died",
    "segfault": "a process crashed (segmentation fault)",
    "abort": "a process aborted",
    "bus_error": "a process crashed (bus error)",
    "fpe": "a process crashed (floating point exception)",
    "terminated": "a process was terminated (SIGTERM)",
    "fatal_python_error": "a fatal Python error",
    "engine_start_timeout": "the engine did not report ready in time",
    "worker_hung": "a worker stopped answering the engine",
    "shm_too_small": "/dev/shm is too small for the workers' message queue",
    "thread_crashed": "a background thread crashed and ended the process",
}
CONSEQUENCES = frozenset({"sigquit", "killed", "terminated", "process_died"})
"""Crash reasons that say a process ended, not why: a parent's `Received sigquit` may come
the moment before the child's own crash line, which is the cause."""
DEATHS = frozenset({"process_died", "killed", "segfault", "abort", "bus_error", "fpe"})
"""Crash reasons of a process that died of a signal or vanished: one that comes before any
exception is where it began, and the exceptions after it are the other processes noticing
(vLLM's `Worker proc VllmWorker-1 died unexpectedly`, then `RuntimeError: Executor failed.`)."""
# After an exception a kill is the server's own teardown, not a sign of the OOM killer
_KILLED_AFTER_EXCEPTION = "the server was killed"
_HINT = ("Read the traceback {where} this line in the server log; restart the server "
         "(the client resumes from its outputs). A watchdog timeout often follows a hang "
         "after an OOM; `Killed` alone usually means host RAM ran out.")
"""`where`: a crash line that opens a traceback (`Scheduler hit an exception:`, vLLM's
`Exception in worker ... while processing method`) comes before it; a crash marker after."""
# a hung collective: the rank that stopped is the cause, not the rank whose watchdog fired
_COLLECTIVE_HINT = ("One rank stopped taking part in a collective (a stuck or dead process, a GPU "
                    "fault, a network error): the first error lines of the log, across ranks, "
                    "name it. Restart the server; if it recurs, NCCL_DEBUG=INFO shows where it "
                    "hangs.")
_REASON_HINTS = {
    "port_in_use": ("Another process holds the port{holder}, most often the server this one "
                    "restarts from, still running: `ss -ltnp | grep :{port}` names it; stop it, or "
                    "start with another --port."),
    "nccl_hang": _COLLECTIVE_HINT,
    "nccl_timeout": _COLLECTIVE_HINT,
    "unhealthy": ("The server stopped answering its health check (the scheduler or detokenizer "
                  "hung, often after an OOM or a stuck collective) and was then stopped: read the "
                  "lines before `Health check failed`, and restart it."),
    "illegal_memory_access": ("A CUDA kernel read or wrote outside its memory: a bug in a kernel "
                              "(an attention or MoE backend, CUDA graphs) far more often than in "
                              "the model. Restart; if it recurs, run with another attention "
                              "backend or without CUDA graphs (SGLang --disable-cuda-graph, vLLM "
                              "--enforce-eager) to narrow it down, CUDA_LAUNCH_BLOCKING=1 names "
                              "the kernel; a newer release may have fixed it."),
    "device_assert": ("A kernel's own check failed, most often an index out of range: a token id "
                      "past the vocabulary (a tokenizer or chat template that does not match the "
                      "model), a bad sampling parameter. The `Assertion ... failed` line names the "
                      "check; restart, and find the request that hit it in the client's last "
                      "prompts."),
    "cuda_error": ("The GPU's CUDA context is lost{detail}: restart the server. If it recurs, "
                   "look for the GPU's Xid errors (`dmesg | grep -i xid`) and check the driver; "
                   "CUDA_LAUNCH_BLOCKING=1 names the failing kernel."),
    "shm_too_small": ("The container's shared memory (/dev/shm, 64 MB by default in Docker) is "
                      "too small for the queue between vLLM's processes: start it with "
                      "--shm-size=16g (or --ipc=host), or mount a larger /dev/shm."),
    "engine_start_timeout": ("The API server stopped waiting for the engine{waited}: loading the "
                             "weights (or compiling, warming up) took longer. Raise "
                             "VLLM_ENGINE_READY_TIMEOUT_S (e.g. 1800) and restart; the engine's "
                             "lines before this one show how far it got."),
    "worker_hung": ("A worker did not answer the engine's `{method}` call in time: a rank hung in "
                    "a collective, died, or ran a step longer than "
                    "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS (300 s by default). The first error lines "
                    "across workers name the one that stopped; restart the server, and raise that "
                    "timeout only where steps are that long by design."),
}
_DIED_HINT = ("A server process{who} died before anything else failed, with no traceback of its "
              "own here: killed (the kernel's OOM killer, when host RAM ran out: `dmesg | grep -i "
              "kill`), or crashed inside a native kernel. The lines just before it, of every "
              "process, may say which; the errors after it are the others noticing. Restart the "
              "server.")
_QUOTE_CAP = 100
"""How much of the exception line the evidence quotes (the alert's `line` has it whole)."""
_VERSIONS = ("ImportError", "ModuleNotFoundError")


def rule_crash(ctx: RuleContext) -> Iterator[Finding]:
    """`server_crash` (crit, at once): exception, watchdog timeout, SIGQUIT, Killed and the
    other failure families; named after the exception line it came with, where there is one."""
    crashes = ctx.events.since_start_of("crash")
    if not crashes:
        ctx.resolve("server_crash")
        return
    first = crashes[0]
    # what they say: the causes before the markers that only say a process ended, and of
    # those a line whose reason has its own fix before an exception's generic opener; but a
    # death before all else is where it began
    died_first = first.get("reason") in DEATHS and not ctx.events.since_start_of("oom") \
        and not any(_is_exception(e) for e in ctx.events.since_start
                    if line_order(e) < line_order(first))
    crashes = sorted(crashes, key=lambda e: (not (died_first and e is first),
                                             e.get("reason") in CONSEQUENCES,
                                             e.get("reason") not in _REASON_HINTS))
    s = ctx.snap.server
    cause = crash_cause(ctx.events.since_start, line_order(s.last_decode or {}),
                        line_order(s.last_prefill or {}))
    own = {_short_type(e) for e in crashes if isinstance(e.get("exception"), str)}
    if cause is not None and _short_type(cause) in own and _bare(cause):
        cause = None  # a bare exception a crash line chains from, of its own type, is no
        # other cause: vLLM's `TimeoutError` before `TimeoutError: RPC call to ... timed out`
    # a kill after the cause is told (an exception, an OOM, another process's crash) is the
    # server's own teardown: the OOM killer only where nothing else failed
    explained = cause is not None or bool(ctx.events.since_start_of("oom")) or any(
        e.get("reason") not in CONSEQUENCES for e in crashes)
    what = "; ".join(dict.fromkeys(_crash_text(e, explained) for e in crashes))
    evidence = f"{len(crashes)} crash line(s), first {where(first)}"
    if cause is None:
        lead = crashes[0]  # the line that says most of why
        below = lead.get("reason") == "exception"
        hints = {**_REASON_HINTS, **dict.fromkeys(DEATHS, _DIED_HINT)} if died_first \
            else _REASON_HINTS
        hint = hints.get(str(lead.get("reason")), "").format(
            port=lead.get("port") or "<port>",
            holder=f" (pid {lead['holder_pid']})" if lead.get("holder_pid") else "",
            waited=f" ({lead['waited_s']} s)" if lead.get("waited_s") else "",
            method=lead.get("method") or "?",
            who=f" ({lead['component']})" if lead.get("component") else "",
            detail=f" ({lead['detail']})" if lead.get("detail") else "")
        yield Finding("server_crash", "crit", f"server crashed: {what}", evidence,
                      hint or _HINT.format(where="below" if below else "above"),
                      line=text_of(lead), since=first.get("at"))
        return
    name = _short_type(cause)
    yield Finding("server_crash", "crit", f"server crashed: {name}; {what}",
                  f"{_quote(cause)} {where(cause)}; then {evidence}", _cause_hint(cause, name),
                  line=text_of(cause), since=first.get("at"))


def crash_cause(events: Sequence[Record], *stats_lines: int) -> Record | None:
    """The exception line a crash came with: the last Python exception line of this launch
    before the first crash line that follows one, or after a crash line that opens a
    traceback (`Scheduler hit an exception:`). Not one the server worked on after (a stats
    line later in the file, at `stats_lines`; a ready banner), nor one of the launch before
    (a server_args line since). None where the launch had a CUDA OOM: that is its root cause,
    with its own alert (the crash is one of its consequences).
    """
    if any(e.get("event") == "oom" for e in events):
        return None
    newest_stats = max(stats_lines, default=0)
    cause: Record | None = None
    opened = False
    for e in events:
        kind = e.get("event")
        if kind in ("ready", "server_args"):
            cause, opened = None, False
        elif kind == "crash":
            if cause is not None:
                return cause
            if e.get("reason") in DEATHS:
                return None  # a process died first: what follows is the others noticing
            opened = e.get("reason") == "exception"
        elif _is_exception(e) and not 0 < line_order(e) < newest_stats:
            cause = e
    return cause if opened else None


def _is_exception(ev: Record) -> bool:
    """A Python exception line; `SystemExit` and `KeyboardInterrupt` are stops, not faults."""
    name = ev.get("exception")
    return ev.get("event") == "error" and isinstance(name, str) \
        and name.endswith(("Error", "Exception"))


def _bare(ev: Record) -> bool:
    """An exception line that is its type alone (`TimeoutError`): it says nothing more."""
    text = str(ev.get("message") or "").strip()
    return text in (str(ev.get("exception")), _short_type(ev), "")


def _short_type(ev: Record) -> str:
    """`torch.AcceleratorError` -> `AcceleratorError`: the type, without its module path."""
    return str(ev["exception"]).rsplit(".", 1)[-1]


def _quote(ev: Record) -> str:
    text = str(ev.get("message") or ev["exception"])
    return f"`{text}`" if len(text) <= _QUOTE_CAP else f"`{text[:_QUOTE_CAP - 1]}…`"


def _cause_hint(ev: Record, name: str) -> str:
    """Fix the exception the crash came with; an import that fails or a module without the
    name its caller asks for is a package version mismatch far more often than a bug."""
    msg = str(ev.get("message") or "")
    versions = name in _VERSIONS or (name == "AttributeError" and msg.find("module '") >= 0)
    why = (" A module that lacks a name, or an import that fails, usually means mismatched "
           "package versions." if versions else "")
    return (f"Fix the {name} {where(ev)}: the traceback above it in the server log shows "
            "where it was raised. Then restart the server (the client resumes from its "
            f"outputs).{why}")


def _crash_text(ev: Record, explained: bool = False) -> str:
    """What a crash line says happened; an exception names the component that hit it."""
    reason = str(ev.get("reason") or "exception")
    if reason == "exception" and isinstance(ev.get("component"), str):
        return f"{ev['component']} hit an exception"
    if reason == "killed" and explained:
        return _KILLED_AFTER_EXCEPTION
    return _CRASH_TEXT.get(reason, reason)
