"""Alert rules about the run around the server: client log, outputs, client processes, GPUs."""

from __future__ import annotations

from collections.abc import Iterator

from dash.core.alerts.flags import flags_for, mem_now
from dash.core.alerts.model import Finding, RuleContext, fmt_duration
from dash.core.snapshot import PartitionSnapshot

GB = 1024**3


def rule_client_buffered(ctx: RuleContext) -> Iterator[Finding]:
    """`client_log_buffered` (warn): the client log has been empty or still for
    `buffered_after_s` (counted from when kdash first saw it) while an output grew.

    An empty log waits as long as a still one: a client that has just started may not have
    printed its first line yet.
    """
    c, cfg = ctx.snap.client, ctx.cfg
    if c.log_path is None or c.log_bytes is None or c.log_still_since is None:
        return
    still = c.log_still_since
    if ctx.now - still < cfg.buffered_after_s:
        return
    growing = [p for p in ctx.snap.partitions
               if p.last_write is not None and p.last_write > still
               and ctx.now - p.last_write <= cfg.buffered_after_s
               and p.written >= cfg.buffered_min_lines]
    if not growing:
        return
    p = growing[0]
    state = "is empty (0 bytes)" if c.log_bytes == 0 else \
        f"has not grown for {fmt_duration(ctx.now - still)}"
    yield Finding("client_log_buffered", "warn",
                  f"the client log {state} while {p.name} grew {p.at_start} -> {p.done} lines",
                  f"client log {c.log_path}: {c.log_bytes} bytes; {len(growing)} output(s) growing",
                  "The client's output is block-buffered: run it with `python -u` or "
                  "PYTHONUNBUFFERED=1 (tqdm, prints and tracebacks then reach the log at once).",
                  since=still)


def _is_done(p: PartitionSnapshot) -> bool:
    return p.status == "done" or (p.total is not None and p.total > 0 and p.done >= p.total)


def rule_output_stalled(ctx: RuleContext) -> Iterator[Finding]:
    """`output_stalled` (warn, per partition): a partition that owes lines has stopped growing.

    Only the tracker's "stalled" status counts: a quiet partition with no known total is
    "idle" (it may simply be finished), never stalled.
    """
    cfg, now = ctx.cfg, ctx.now
    for p in ctx.snap.partitions:
        if p.status != "stalled" or _is_done(p) or p.last_write is None:
            continue
        quiet = now - p.last_write
        if quiet < cfg.stalled_after_s:
            continue
        total = f"/{p.total}" if p.total is not None else ""
        yield Finding("output_stalled", "warn",
                      f"{p.name}: no new output for {fmt_duration(quiet)} at {p.done}{total}",
                      f"{p.path} last grew {fmt_duration(quiet)} ago",
                      "Check the client log for a traceback or a hang, and the server for a "
                      "crash; a client that died leaves its partition here.",
                      subject=p.name, since=p.last_write)


def rule_partition_done(ctx: RuleContext) -> Iterator[Finding]:
    """`partition_done` (info, per partition): it reached its total while kdash watched."""
    for p in ctx.snap.partitions:
        if not _is_done(p) or p.at_start >= p.done:
            continue
        if p.last_write is not None and ctx.now - p.last_write > ctx.cfg.done_show_s:
            continue
        total = p.total if p.total is not None else p.done
        yield Finding("partition_done", "info", f"{p.name} is done ({p.done}/{total})",
                      f"{p.written} lines written while watched", "", subject=p.name,
                      since=p.last_write)


def rule_client_processes(ctx: RuleContext) -> Iterator[Finding]:
    """`client_missing` / `client_duplicate` (warn): no client process, or more than one."""
    c = ctx.snap.client
    if c.processes is None:
        return
    pattern = c.process_pattern or "the client pattern"
    if not c.processes:
        yield Finding("client_missing", "warn", f"no process matches {pattern!r}",
                      "0 matching processes",
                      "The client is not running: did it finish, crash or get killed? See the "
                      "client log's last lines.", fire_after=ctx.cfg.client_after_s)
    elif len(c.processes) > 1:
        pids = ", ".join(str(p.pid) for p in c.processes[:8])
        yield Finding("client_duplicate", "warn",
                      f"{len(c.processes)} processes match {pattern!r}", f"pids {pids}",
                      "Two clients write the same outputs twice (duplicated lines): stop the "
                      "extra one.", fire_after=ctx.cfg.client_after_s)


def rule_gpu_headroom(ctx: RuleContext) -> Iterator[Finding]:
    """`gpu_headroom_low` (warn): free GPU memory, or avail mem after CUDA graph, too low."""
    cfg, snap = ctx.cfg, ctx.snap
    ctx.launch_ended("gpu_headroom_low")  # the free memory of the new launch is measured anew
    parts: list[str] = []
    low = [g for g in snap.gpus.gpus if g.memory_free is not None
           and g.memory_free < cfg.gpu_free_min_gb * GB] if snap.gpus.available else []
    if low:
        parts.append(_free_by_gpu([(g.index, g.memory_free) for g in low
                                   if g.memory_free is not None]))
    avail = snap.server.facts.get("avail_mem_gb")
    graph_low = isinstance(avail, (int, float)) and avail < cfg.cuda_graph_min_gb
    if graph_low:
        parts.append(f"avail mem after CUDA graph capture {avail} GB")
    if not parts:
        return
    flags = flags_for(snap.server.engine)
    mem = mem_now(flags, snap.server.facts)
    at = f" (now {mem:g})" if mem is not None else ""
    yield Finding("gpu_headroom_low", "warn", "GPU memory headroom is low: " + "; ".join(parts),
                  f"threshold {cfg.gpu_free_min_gb} GB free, {cfg.cuda_graph_min_gb} GB after "
                  "CUDA graph", f"A large prefill can OOM: lower {flags.mem}{at} or "
                  f"{flags.prefill_cap}, and keep other processes off these GPUs.",
                  fire_after=0.0 if graph_low else cfg.gpu_after_s)


def _free_by_gpu(free: list[tuple[int, int]]) -> str:
    """`GPU 0: 0.58 GB free, GPUs 1-7: 0.88 GB free`: the GPUs that show the same figure named
    together (eight of them listed one by one took three lines of the alert at 80x24)."""
    groups: dict[str, list[int]] = {}
    for index, value in free:
        groups.setdefault(f"{value / GB:.2f}", []).append(index)
    return ", ".join(f"{_gpu_names(indices)}: {gb} GB free" for gb, indices in groups.items())


def _gpu_names(indices: list[int]) -> str:
    """`GPU 3`, `GPUs 1-7`, `GPUs 0, 2, 5-6`: runs of consecutive indices as ranges."""
    if len(indices) == 1:
        return f"GPU {indices[0]}"
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return "GPUs " + ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


RUN_RULES = (rule_client_buffered, rule_output_stalled, rule_partition_done,
             rule_client_processes, rule_gpu_headroom)
