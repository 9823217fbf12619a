"""Alert rules about the server process: OOM, crash, down, restarted, silent, retractions."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from dash.core.alerts.flags import SGLANG, EngineFlags, flags_for, mem_now
from dash.core.alerts.incidents import rule_restarted
from dash.core.alerts.model import Finding, RuleContext, fmt_duration, text_of, where
from dash.core.alerts.rules_crash import rule_crash
from dash.core.linenums import line_order
from dash.core.snapshot import Record, ServerLogSnapshot, Severity

# OOM reasons that are a startup capacity problem, not a batch too large at run time
_OOM_TITLE = {
    "gpu_memory_taken": "not enough free GPU memory at startup: another process holds it",
    "kv_cache_too_small": "the KV cache does not fit at startup",
    "gpu_memory_changed": "GPU memory changed while the server measured it at startup",
    "host_memory": "not enough host memory for the hierarchical KV cache",
    "mem_fraction": "the KV pool does not fit in the memory share at startup",
    "kv_pool_full": "the KV cache pool ran out at run time",
    "weights_oom": "the model's weights do not fit in GPU memory",
}


def _pool_fix(ev: Mapping[str, Any], engine: str | None, facts: Mapping[str, Any]) -> str | None:
    """The fixes of a pool that does not fit or runs out, or of weights that do not, not of a
    CUDA OOM at run time: the line itself says to raise the share (what the weights leave is
    too little for the pool), where a CUDA OOM wants it lowered (headroom outside the pool)."""
    flags = flags_for(engine)
    reason = str(ev.get("reason"))
    now = mem_now(flags, facts)
    if now is None and isinstance(ev.get("mem_fraction_static"), (int, float)):
        now = float(ev["mem_fraction_static"])  # the share the line itself names
    if reason == "mem_fraction":
        needed = ev.get("needed_fraction")
        if isinstance(needed, (int, float)):  # the line says how much: that, not a guess
            now_text = f" (now {now:g})" if now is not None else ""
            raise_ = f" above {needed:g}{now_text}"
        else:
            raise_ = f" (now {now:g}; try {min(now + 0.03, 0.98):.2f})" if now is not None else ""
        return (f"Raise {flags.mem}{raise_}, as the line says: the weights leave too little of "
                "it for the KV pool. Or make the weights smaller per GPU (a larger "
                f"tensor-parallel size, a quantized model), or lower {flags.requests_cap} for a "
                "hybrid model's state cache.")
    if reason == "host_memory":
        asked, free = ev.get("requested_gb"), ev.get("host_free_gb")
        numbers = (f" ({asked:g} GB asked, {free:g} GB free)"
                   if isinstance(asked, (int, float)) and isinstance(free, (int, float)) else "")
        return (f"Host RAM, not GPU memory, is short for the hierarchical KV cache{numbers}: "
                "lower --hicache-ratio or --hicache-size, or free host memory (other jobs, "
                "another server's host pool); the GPU's memory share is not the issue.")
    if reason == "weights_oom":
        return (f"The weights alone do not fit on one GPU: spread them over more GPUs (a larger "
                f"{flags.tp}), use a quantized model, or GPUs with more memory; check with "
                "nvidia-smi that no other process holds memory on the GPU.")
    if reason == "kv_pool_full":
        return (f"Cap the batch ({flags.batch_caps}), or give the pool more tokens: "
                f"{flags.fp8_kv}, or raise {flags.mem} where the GPU has memory left after CUDA "
                "graph capture.")
    return None


def _headroom(facts: Mapping[str, Any]) -> str:
    parts = []
    if facts.get("avail_mem_gb") is not None:
        parts.append(f"avail mem after CUDA graph {facts['avail_mem_gb']} GB")
    if facts.get("mem_fraction_static") is not None:
        parts.append(f"mem_fraction_static {facts['mem_fraction_static']}")
    return ", ".join(parts)


def _size(gib: float) -> str:
    """`2.19 MiB`, `138 MiB`, `79.15 GiB`, `4 GiB`."""
    return f"{gib * 1024:.3g} MiB" if gib < 1 else f"{round(gib, 2):g} GiB"


def _oom_numbers(ev: Mapping[str, Any]) -> str:
    """What PyTorch's OOM line says of the GPU: `GPU 0: 2.19 MiB free of 79.15 GiB, 138 MiB
    asked; this process holds 79.12 GiB` ("" where the line prints no figures)."""
    free, total = ev.get("free_gb"), ev.get("total_gb")
    if not isinstance(free, (int, float)) or not isinstance(total, (int, float)):
        return ""
    text = f"GPU {ev.get('device') or '?'}: {_size(free)} free of {_size(total)}"
    if isinstance(ev.get("asked_gb"), (int, float)):
        text += f", {_size(ev['asked_gb'])} asked"
    if isinstance(ev.get("process_gb"), (int, float)):
        text += f"; this process holds {_size(ev['process_gb'])}"
    return text


def _oom_fix(engine: str | None, facts: Mapping[str, Any]) -> str:
    """Lower the memory share (from its value now, where the log gave it) or cap the batch,
    in the flags of the server that printed the OOM."""
    flags = flags_for(engine)
    now = mem_now(flags, facts)
    lower = f" (now {now:g}; try {now - 0.05:.2f})" if now is not None else ""
    return (f"Lower {flags.mem}{lower} to leave more headroom outside the KV cache, or cap "
            f"{flags.batch_caps}; the server usually needs a restart after an OOM.")


def _while_loading(events: Sequence[Record], oom: Record) -> bool:
    """The OOM came while the weights loaded: the last startup line before it is a load's
    begin (`Load weight begin`, `Loading model from scratch...`), not its end. Neither engine
    says so in the OOM itself (vLLM 0.34 and SGLang raise torch's own from `load_model`)."""
    last = None
    for e in events:
        if e is oom:
            break
        if e.get("event") in _STARTUP_STEPS:
            last = e
    return last is not None and last.get("event") == "load_weights" and last.get("phase") == "begin"


def rule_oom(ctx: RuleContext) -> Iterator[Finding]:
    """`server_oom` (crit, at once): CUDA OOM in the log since the server last started."""
    ooms = ctx.events.since_start_of("oom")
    if not ooms:
        ctx.resolve("server_oom")  # a new start: the restart's incident line carries it on
        return
    first, facts = ooms[0], ctx.snap.server.facts
    if first.get("reason") == "cuda_oom" and _while_loading(ctx.events.since_start, first):
        first = {**first, "reason": "weights_oom"}
    during = ""
    prefill = ctx.snap.server.last_prefill
    if prefill and prefill.get("new_token") and line_order(prefill) <= line_order(first):
        during = f" after a prefill of {prefill['new_token']} new tokens"
    # which rank ran out, where the line names one (`DP3 TP6`, vLLM's `EngineCore_DP1`)
    rank = f"on {first['rank']} " if isinstance(first.get("rank"), str) and first["rank"] else ""
    evidence = f"OOM {rank}{where(first)}{during}; {len(ooms)} OOM line(s)"
    numbers = _oom_numbers(first)
    if numbers:
        evidence += f"; {numbers}"
    if _headroom(facts):
        evidence += f"; {_headroom(facts)}"
    reason = str(first.get("reason"))
    hint = _pool_fix(first, ctx.snap.server.engine, facts) or _oom_fix(ctx.snap.server.engine,
                                                                         facts)
    title = _OOM_TITLE.get(reason, "CUDA out of memory in the server" + during)
    if isinstance(first.get("hint"), str):  # the line itself says what to do (a stale process)
        hint = first["hint"]
    yield Finding("server_oom", "crit", title, evidence, hint, line=text_of(first),
                  since=first.get("at"))


_STARTUP_STEPS = {"load_weights", "kv_cache", "cuda_graph"}
"""Lines a server prints between its arguments and its ready banner."""


def start_in_progress(events: Sequence[Record], last_record_at: float | None, now: float,
                      silent_after_s: float) -> Record | None:
    """The start in progress, if the log shows one: a new start (its arguments, or a restart)
    followed only by startup lines, no ready banner, crash or stats line since, and the last of
    them at most `silent_after_s` old (a start that stopped printing is hung, not starting).
    Its URL does not answer until the banner: that says nothing about the address or the
    server's health."""
    newest = events[-1] if events else None
    for e in reversed(events):
        if e.get("event") in _STARTUP_STEPS:
            continue
        if e.get("event") not in ("server_args", "restart") or newest is None:
            return None
        at, began = newest.get("at"), e.get("at")
        if not isinstance(at, (int, float)) or not isinstance(began, (int, float)) \
                or now - at > silent_after_s:
            return None
        if last_record_at is not None and last_record_at > began:
            return None  # stats lines since: it serves (its banner went unread)
        return e
    return None


def starting(ctx: RuleContext) -> Record | None:
    """The start in progress, if the log shows one (`start_in_progress`)."""
    return start_in_progress(ctx.events.all, ctx.snap.server.last_record_at, ctx.now,
                             ctx.cfg.silent_after_s)


def stopped(ctx: RuleContext) -> bool:
    """The log's last word, after its last stats line, is that the server shut down (a SIGTERM
    before a restart): its URL is silent because it stopped, not because it is elsewhere."""
    events, last = ctx.events.all, ctx.snap.server.last_record_at
    if not events or events[-1].get("event") != "shutdown":
        return False
    at = events[-1].get("at")
    return last is None or (isinstance(at, (int, float)) and at >= last)


def rule_down(ctx: RuleContext) -> Iterator[Finding]:
    """`server_down`: the URL does not answer (`down_polls` polls in a row) and the log is not
    live. Crit when the server answered before, crashed, or went silent with requests running;
    a warning when nothing says it ever ran. Clears at once when it answers or its log is live."""
    http, live = ctx.snap.http, ctx.snap.liveness
    if http.state != "down" or http.consecutive_failures < ctx.cfg.down_polls:
        ctx.resolve("server_down")
        return
    if live.log == "live" or starting(ctx) is not None:
        ctx.resolve("server_down")
        return
    last_ok = "never answered" if http.last_ok_at is None else \
        f"last answered {fmt_duration(max(0.0, ctx.now - http.last_ok_at))} ago"
    why = _down_evidence(ctx)
    severity: Severity = "crit" if http.last_ok_at is not None or why else "warn"
    evidence = f"{http.consecutive_failures} failed polls; {last_ok}" + "".join(
        f"; {w}" for w in why)
    yield Finding("server_down", severity, f"server unreachable at {http.url}: {http.reason}",
                  evidence, "Is the server process alive (GPU processes, `ps`)? Check the end of "
                  "the server log for a crash, and the --url/port." + _where_hint(ctx),
                  since=http.since)


def _down_evidence(ctx: RuleContext) -> list[str]:
    """What, beyond the URL, says the server is down: a crash, or a log gone silent."""
    live, s = ctx.snap.liveness, ctx.snap.server
    if live.log == "crashed":
        crash = ctx.events.since_start_of("oom", "crash")
        return [f"the log shows a {'CUDA OOM' if crash and crash[0].get('event') == 'oom' else 'crash'}"]
    running = _running(s)
    if live.log == "quiet" and isinstance(running, (int, float)) and running > 0 \
            and live.log_age_s is not None:
        return [f"the log has been silent for {fmt_duration(live.log_age_s)} with "
                f"{running:g} requests running"]
    return []


def rule_http_unreachable(ctx: RuleContext) -> Iterator[Finding]:
    """`http_unreachable` (warn): the URL does not answer, but the log is live: the server works
    and the URL (or port) is wrong. Clears at once when it answers."""
    http, live = ctx.snap.http, ctx.snap.liveness
    if http.state != "down" or http.consecutive_failures < ctx.cfg.down_polls \
            or live.log != "live" or starting(ctx) is not None or stopped(ctx):
        ctx.resolve("http_unreachable")
        return
    age = "" if live.log_age_s is None else f"; last stats line {fmt_duration(live.log_age_s)} ago"
    restarted = launch_start(ctx)
    if http.last_ok_at is not None and http.since is not None and restarted >= http.since \
            and ctx.now - restarted <= RESTART_GRACE_S:
        ctx.resolve("http_unreachable")  # it went down for the restart the log shows, and
        return  # the new server opens its port as it gets ready: not a death
    if http.last_ok_at is not None:
        # It answered at this very address: the address is right, the server stopped (a
        # death without a crash line, SIGKILL, a hang), and its log's last line is recent.
        ago = fmt_duration(max(0.0, ctx.now - http.last_ok_at))
        yield Finding("http_unreachable", "warn",
                      f"stopped answering at {http.url} (it answered {ago} ago)",
                      f"{http.reason}; {http.consecutive_failures} failed polls; the server's "
                      f"log is still fresh{age}",
                      "It answered at this address before, so the address is right: the server "
                      "may have just died or hung (is its process alive: `ps`, nvidia-smi? any "
                      "traceback at the end of its log?); if its log stays quiet this becomes "
                      "server_down.", since=http.since)
        return
    yield Finding("http_unreachable", "warn", f"no answer at {http.url}{_port_said(ctx)}",
                  f"{http.reason}; {http.consecutive_failures} failed polls; never answered; "
                  f"the server's log is live{age}",
                  "The server works (its log is live), but not at this address: "
                  + _where_hint(ctx, always=True).strip(), since=http.since)


def _port_said(ctx: RuleContext) -> str:
    """"; the log's server_args say port 8000" when they name another port than the URL's."""
    port = _log_port(ctx)
    url = ctx.snap.http.url or ""
    if port is None or url.rstrip("/").endswith(f":{port}"):
        return ""
    return f"; the log's server_args say port {port}"


def _log_port(ctx: RuleContext) -> int | None:
    port = ctx.snap.http.log_port or ctx.snap.server.facts.get("port")
    return port if isinstance(port, int) and not isinstance(port, bool) else None


def _where_hint(ctx: RuleContext, always: bool = False) -> str:
    http = ctx.snap.http
    port = _log_port(ctx)
    said = _port_said(ctx)
    if said and port is not None:
        host = (http.url or "http://127.0.0.1").rsplit(":", 1)[0]
        return f" Pass --url {host}:{port}, or --no-http to watch the log alone."
    if not always:
        return ""
    why = f" (this one is {http.url_why})" if http.url_why and http.url_source != "flag" else ""
    return f"pass --url with the server's address{why}, or --no-http to watch the log alone."


def rule_silent(ctx: RuleContext) -> Iterator[Finding]:
    """`server_silent` (warn): no stats line for `silent_after_s` while requests were running
    (by the last stats line, unless the server's /metrics now says none are)."""
    s = ctx.snap.server
    ctx.launch_ended("server_silent")
    last = _latest_stats(s.last_decode, s.last_prefill)
    if last is None or s.last_record_at is None:
        return
    # The last stats line heard: by its stamp, or by when kdash saw it arrive. A server's clock
    # minutes off is read as printed until reads teach its skew (the log clock), yet lines that
    # arrive as they are written mean the server speaks, as the log's liveness says.
    heard = max(s.last_record_at, s.last_record_arrived_at or s.last_record_at)
    quiet = ctx.now - heard
    running = _running(s)
    if quiet < ctx.cfg.silent_after_s:
        ctx.resolve("server_silent")  # a stats line arrived: the server speaks again
        return
    if not isinstance(running, (int, float)) or running <= 0:
        return
    http = ctx.snap.http
    if http.state == "up" and http.metrics.get("running_req") == 0:
        return  # the last requests finished after the last stats line: idle, not hung
    if sum(p.written_after(heard) for p in ctx.snap.partitions) >= running:
        return  # as many samples were written after it as it had running: they all finished
    if http.state == "up" and http.generated_at is not None \
            and ctx.now - http.generated_at <= ctx.cfg.log_live_s:
        yield _not_its_log(ctx, quiet, last)
        return
    waits = [e for e in ctx.events.since_start_of("error")
             if e.get("reason") == "workers_waiting" and float(e.get("at") or 0.0) >= heard]
    if waits:
        yield _waiting(s.engine, http.url, quiet, running, last, waits, heard)
        return
    after = ctx.events.since_start_of("oom", "crash")
    cause = f"; last problem: {after[-1].get('event')} {where(after[-1])}" if after else ""
    # A server prints its stats while requests run, so the last line before it goes idle
    # always shows some running: without /metrics or the outputs to tell, say both.
    yield Finding("server_silent", "warn",
                  f"no decode/prefill line for {fmt_duration(quiet)}; the last one had "
                  f"{running:g} running",
                  f"last stats line {where(last)}{cause}",
                  "Idle if those requests have finished since (a server's last stats line "
                  "always shows some running); hung if not, as after an OOM: then "
                  f"{_probe(s.engine, http.url)} does not answer; restart it. "
                  + _tell_how(s.engine, bool(ctx.snap.partitions), http.state == "up"),
                  since=heard)


def _waiting(engine: str | None, url: str | None, quiet: float, running: float, last: Record,
             waits: list[Record], heard: float) -> Finding:
    """Silent, and its processes say they wait on each other (vLLM's shared-memory queue):
    hung, or a long compile or quantization; not idle."""
    return Finding(
        "server_silent", "warn",
        f"no decode/prefill line for {fmt_duration(quiet)} with {running:g} running, and its "
        "processes wait on each other: hung (or compiling)",
        f"last stats line {where(last)}; {len(waits)} wait line(s) since, latest "
        f"{where(waits[-1])}",
        "A process of the server stopped answering the others (a stuck collective, a dead "
        f"worker) unless it compiles or quantizes: if {_probe(engine, url)} does not answer "
        "either, restart the server; the traceback or NCCL lines above the first wait name the "
        "process.",
        line=text_of(waits[-1]), since=heard)


def _not_its_log(ctx: RuleContext, quiet: float, last: Record) -> Finding:
    """The log is silent while the server at the URL generates (its /metrics' count of
    generated tokens grows): no hang, and no restart wanted; the log kdash reads is not the
    one the server writes now (an old file, a rotation it did not follow, another server's)."""
    s, http = ctx.snap.server, ctx.snap.http
    running = http.metrics.get("running_req")
    return Finding(
        "server_silent", "warn",
        f"no decode/prefill line for {fmt_duration(quiet)}, but the server at {http.url} "
        "generates: this log is not the one it writes now",
        f"last stats line {where(last)}; /metrics: generated tokens growing"
        + (f", {running:g} running" if running is not None else ""),
        "Do not restart it: pass the log it writes as --log (`ls -l /proc/<pid>/fd/1` of "
        "the server names it; after a rotation it did not reopen, the renamed file).",
        since=s.last_record_at)


def _tell_how(engine: str | None, outputs: bool, http_up: bool) -> str:
    """What would let kdash tell idle from hung, of what it does not have yet: the server's
    /metrics (running requests) and the client's outputs (samples written since)."""
    metrics = "" if http_up and engine == "vllm" else (
        "its /metrics (HTTP on)" if engine == "vllm" else "--enable-metrics")
    wants = [w for w in (metrics, "" if outputs else "--outputs") if w]
    verb = "lets" if len(wants) == 1 else "let"
    return f"{' or '.join(wants)} {verb} kdash tell." if wants else ""


def _probe(engine: str | None, url: str | None) -> str:
    """A request that only a server able to generate answers. Not `/health`: vLLM's says the
    engine process is alive, and SGLang's before 0.4.10 always answers; `/health_generate`
    runs a one-token generation on every SGLang version."""
    base = (url or "<url>").rstrip("/")
    if engine == "vllm":
        return f"a one-token request to `{base}/v1/completions`"
    return f"`curl {base}/health_generate` (a one-token generation)"


RESTART_GRACE_S = 120.0
"""How long after a restart the log shows a URL may stay silent (the new server loading, then
opening its port) before `http_unreachable` says it stopped answering."""


def launch_start(ctx: RuleContext) -> float:
    """When the running launch began: its restart's time (-inf with no restart seen)."""
    i = ctx.events.last_restart
    at = ctx.events.all[i].get("at") if i is not None else None
    return float(at) if isinstance(at, (int, float)) else float("-inf")


def rule_retractions(ctx: RuleContext) -> Iterator[Finding]:
    """`retractions` (warn): at least `retract_min_events` retractions within the window."""
    window = ctx.cfg.retract_window_s
    ctx.launch_ended("retractions")
    start = launch_start(ctx)
    seen: dict[tuple[Any, Any], Record] = {}
    for e in ctx.events.retracts_within(ctx.now, window):
        if e["at"] < start:
            continue  # the launch before: its retractions say nothing about this one
        # Every TP rank prints the same retraction: count it once.
        seen.setdefault((e.get("ts"), e.get("message")), e)
    if len(seen) < ctx.cfg.retract_min_events:
        return
    events = list(seen.values())
    reqs = sum(int(e.get("retracted_req") or 0) for e in events)
    rate = len(events) / (window / 60) if window else float(len(events))
    yield Finding("retractions", "warn",
                  f"{len(events)} retraction{'s' if len(events) != 1 else ''} in "
                  f"{fmt_duration(window)} ({rate:.1f}/min, "
                  f"{reqs} requests retracted)",
                  f"latest {where(events[-1])}",
                  _retract_fix(flags_for(ctx.snap.server.engine)),
                  line=text_of(events[-1]), since=events[0].get("at"))


def _retract_fix(flags: EngineFlags) -> str:
    conservative = ", raise --schedule-conservativeness" if flags is SGLANG else ""
    return ("The KV cache pool is full and running requests are evicted and recomputed. "
            f"Lower {flags.requests_cap}{conservative}, or free KV memory (fp8 KV cache: "
            f"{flags.fp8_kv}; host KV cache: {flags.host_cache}).")


def _running(s: ServerLogSnapshot) -> Any:
    """Requests running by the last stats lines: the DP ranks' sum, else the last line's."""
    if s.now is not None and s.now.multi:
        return s.now.running_req
    last = _latest_stats(s.last_decode, s.last_prefill)
    return last.get("running_req") if last else None


def _latest_stats(decode: Record | None, prefill: Record | None) -> Record | None:
    candidates: Sequence[Record] = [r for r in (decode, prefill) if r is not None]
    if not candidates:
        return None
    return max(candidates, key=line_order)


SERVER_RULES = (rule_oom, rule_crash, rule_down, rule_http_unreachable, rule_restarted,
                rule_silent, rule_retractions)
"""Server rules, the root causes first (an OOM before the crash and the silence it causes)."""
