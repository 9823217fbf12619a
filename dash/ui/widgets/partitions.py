"""The partition table (progress of each output file) and the selected partition's details."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from dash.core.samples.dist import Dist
from dash.core.snapshot import ClientProgress, ClientSnapshot, PartitionSnapshot, RunSnapshot
from dash.ui import fmt
from dash.ui.widgets.keyed_table import Cell, KeyedTable
from dash.ui.widgets.panel import Panel

BAR_WIDTH = 8
STATUS_LEVEL = {"done": "ok", "running": "ok", "waiting": "warn", "stalled": "crit", "pending": "dim", "counting": "dim",
                "unreadable": "crit", "missing": "crit"}


class PartitionTable(KeyedTable):
    """One row per partition, keyed by name; 1-9 and up/down move the selection."""

    COMPONENT_CLASSES = KeyedTable.COMPONENT_CLASSES | {
        "parts--bar", "parts--empty", "parts--ok", "parts--warn", "parts--crit", "parts--dim",
    }
    FULL_COLUMNS = (
        ("n", "#", 1), ("name", "partition", 22), ("done", "done/total", 11),
        ("bar", "progress", BAR_WIDTH), ("rate", "/min", 5), ("eta", "ETA", 6),
        ("status", "status", 8), ("trunc", "trunc", 5), ("tok", "tok", 5), ("err", "err", 4),
    )
    """The last three: of the recent samples, the share cut at the token limit and the median
    output tokens; error records and invalid lines since start. They take the place of the
    percentage, which the bar and the details (`done N of M`) still show."""
    COMPACT_COLUMNS = (
        ("n", "#", 1), ("name", "partition", 11), ("done", "done/total", 11),
        ("eta", "ETA", 6), ("status", "status", 7),
    )
    BOX_TITLE = ("partitions", "up/down")

    def _st(self, name: str) -> Style:
        return self.part_style(f"parts--{name}")


    def show(self, snap: RunSnapshot) -> None:
        """Update rows from the snapshot's partitions."""
        rows: dict[str, dict[str, Cell]] = {}
        stale = snap.liveness.down  # rates and ETAs measured while the server still ran
        for i, p in enumerate(snap.partitions):
            rows[p.name] = self._row(i, p, stale)
        self.sync(rows)

    def _row(self, i: int, p: PartitionSnapshot, stale: bool = False) -> dict[str, Cell]:
        pct = p.percent
        filled, empty = fmt.bar(None if pct is None else pct / 100, BAR_WIDTH)
        bar = Text(filled, self._st("bar"))
        bar.append(empty, self._st("empty"))
        total = "?" if p.total is None else f"{p.total}"
        status = p.status
        if p.status == "counting" and p.counting_progress is not None:
            status = f"count {p.counting_progress:.0%}"
        return {
            "n": str(i + 1) if i < 9 else "",
            "name": Text(fmt.clean(p.name, 60)),
            "done": f"{p.done}/{total}",
            "bar": bar,
            "rate": Text(fmt.num(p.rate_per_min, digits=1), self._st("dim") if stale else ""),
            "eta": "done" if p.status == "done" else Text(fmt.dur(p.eta_s),
                                                          self._st("dim") if stale else ""),
            "status": Text(status, self._st(STATUS_LEVEL.get(p.status, "dim"))),
            **self._quality_cells(p),
        }

    def _quality_cells(self, p: PartitionSnapshot) -> dict[str, Cell]:
        q = p.quality
        if q is None:
            return {"trunc": "-", "tok": "-", "err": "-"}
        w = q.window
        ratio = w.truncated_ratio
        trunc: Cell = "-" if ratio is None else fmt.pct(ratio)
        if ratio:
            trunc = Text(str(trunc), self._st("crit" if ratio >= 0.1 else "dim"))
        median = w.tokens.median if w.tokens.n else None
        bad = q.total.errors + q.total.invalid
        return {"trunc": trunc, "tok": fmt.count(median),
                "err": Text(fmt.count(bad), self._st("crit")) if bad else "0"}


class PartitionDetails(Panel):
    """Path, lines at start vs written since, last write and recent rate of one partition;
    then the client: its processes, its log's growth and its last progress bar."""

    def show(self, snap: RunSnapshot, name: str | None, outputs: tuple[str, ...] = ()) -> None:
        """Describe the partition called `name` (the table's selection), then the client.

        `outputs`: the --outputs globs; with none given, the details say to pass one.
        """
        p = next((p for p in snap.partitions if p.name == name), None)
        if snap.unmatched_globs and (p is None or len(snap.unmatched_globs) < len(outputs)):
            globs = ", ".join(repr(fmt.clean(g, 80)) for g in snap.unmatched_globs)
            t = Text(f"no file matches --outputs {globs}: check the pattern\n", "bold")
            t.append_text(self._partition(snap, p) if p is not None else Text("\n\n\n\n"))
        elif p is None:
            hint = ("no partitions yet: pass --outputs 'out/*.jsonl'" if not outputs
                    else "looking for the output files...")
            t = Text(hint + "\n\n\n\n\n", "dim")
        else:
            t = self._partition(snap, p)
        t.append_text(client_line(snap, name))
        self.show_text(t)

    def _partition(self, snap: RunSnapshot, p: PartitionSnapshot) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(fmt.clean(p.name, 60), "bold")
        t.append(f"  {fmt.clean(p.path, 200)}\n", "dim")
        if p.error:
            t.append(f"cannot read it: {fmt.clean(p.error, 120)} (counts from before: "
                     f"{p.done:,} done)", "bold")
        elif p.status == "missing":
            t.append(f"not there any more (deleted or moved): {p.done:,} done when last seen",
                     "bold")
        else:
            t.append(f"at start {p.at_start:,}  written since {p.written:,}  done {p.done:,}")
        if p.total and not p.error:
            t.append(f" of {p.total:,} ")
            if p.over_total is not None:
                t.append(f"({p.over_total})", "bold")
            else:
                t.append(f"({p.total - p.done:,} left)")
        t.append("\nlast write ")
        t.append("-" if p.last_write is None else f"{fmt.dur(snap.now - p.last_write)} ago")
        t.append(f"  rate {fmt.num(p.rate_per_min, '/min', 1)}")
        t.append(f"  recent {fmt.num(p.recent_rate_per_min, '/min', 1)}")
        if p.eta_low_s is not None and p.eta_high_s is not None:
            t.append(f"  ETA {fmt.dur(p.eta_low_s)}..{fmt.dur(p.eta_high_s)}")
        t.append("\n")
        t.append_text(quality_lines(snap, p))
        return t


def quality_lines(snap: RunSnapshot, p: PartitionSnapshot) -> Text:
    """Two lines on the partition's recent samples: finish reasons and problems, lengths."""
    t = Text(no_wrap=True, overflow="ellipsis")
    q = p.quality
    t.append("samples ", "bold")
    if q is None:
        why = ("none yet: nothing written to it" if p.status == "pending" and not p.done
               and p.last_write is None
               else "none read (a file with no complete line yet, or [outputs] samples = false)")
        t.append(why + "\n\n", "dim")
        return t
    w = q.window
    t.append(f"last {w.samples:,}: ")
    t.append(" · ".join(f"{k} {n:,}" + (f" ({fmt.pct(n / w.with_finish)})" if k == "length"
                                        else "") for k, n in w.finish) or "no finish reason")
    total = q.total
    for label, n in (("errors", total.errors), ("invalid", total.invalid),
                     ("empty", w.empty)):
        t.append(f"  {label} {n:,}", "bold" if n else "")
    if q.last_invalid is not None and q.last_invalid.line is not None:
        t.append(f" (last at line {q.last_invalid.line:,})", "dim")
    t.append(f"  {q.shape or 'unknown shape'}\n", "dim")
    lengths = (_dist("output tok", w.tokens) if w.tokens.n else _dist("output chars", w.chars))
    t.append(lengths)
    if q.limits:
        t.append(f"  limit {q.limits[0]:,}", "dim")
    if w.prompt_tokens.n:
        t.append(f"  prompt median {w.prompt_tokens.median:,.0f}")
    if w.reasoning_ratio is not None and (q.reasoning_expected or w.reasoning_ratio):
        t.append(f"  reasoning {fmt.pct(w.reasoning_ratio)}")
    if q.tokens_per_s is not None:
        t.append(f"  {q.tokens_per_s:,.0f} tok/s")
    for f in q.unmatched:
        t.append(f"  [outputs] {f.field} = {fmt.clean(f.path, 40)!r} matches nothing", "bold")
    t.append("\n")
    return t


def _dist(label: str, d: Dist) -> str:
    return (f"{label} median {d.median:,.0f} p95 {d.p95:,.0f} max {d.max:,.0f}"
            if d.median is not None and d.p95 is not None and d.max is not None else f"{label} -")


def client_line(snap: RunSnapshot, partition: str | None = None) -> Text:
    """The client in one line: its processes, its log's size and growth, its last error, its
    last progress bar (the selected partition's, where a bar is labelled with its name)."""
    c = snap.client
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("client ", "bold")
    if c.log_path is None and c.processes is None:
        t.append("not watched (--client-log, --process)", "dim")
        return t
    if c.processes is not None:
        if len(c.processes) == 1:
            proc = c.processes[0]
            age = "" if proc.started_at is None else f" up {fmt.dur(snap.now - proc.started_at)}"
            t.append(f"pid {proc.pid}{age}  ")
        else:  # none, or a stale one beside the live one: the alerts say why it matters
            t.append(f"{len(c.processes)} processes match {fmt.clean(c.process_pattern or '', 30)!r}  ",
                     "bold")
    if c.log_path is not None:
        if c.log_status == "error":
            t.append(f"log unreadable: {fmt.clean(c.log_message or '', 80)}  ", "bold")
        elif c.log_bytes is None:
            t.append("log not there yet  ", "dim")
        else:
            grew = ("never grew" if c.log_last_growth is None
                    else f"grew {fmt.dur(snap.now - c.log_last_growth)} ago")
            t.append(f"log {_size(c.log_bytes)}, {grew}  ")
    if c.events:  # a traceback's exception line, an `...Error:` line: why a client died
        # no line number: the tracker counts the lines it read, not the file's (a backfill)
        message = str(c.events[-1].get("message", ""))
        kind = "retry" if c.events[-1].get("event") == "retry" else "error"
        t.append(f"last {kind}: {fmt.clean(message, 80)}  ", "bold")
    bar = _bar_of(c, partition)
    if bar is not None:
        t.append(fmt.clean(bar.text, 120), "dim")
    elif c.resuming is not None:
        t.append(f"resuming: {c.resuming:,} already done", "dim")
    return t


def _bar_of(c: ClientSnapshot, partition: str | None) -> ClientProgress | None:
    """The partition's bar: the one labelled with its name, else the last whose label holds
    it (`B1` is in `B10_code` too, so an exact label wins); else the last bar drawn."""
    if partition:
        exact = [b for b in c.bars if b.label == partition]
        named = exact or [b for b in c.bars if partition in b.label]
        if named:
            return named[-1]
    return c.last_progress


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KB", "MB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} GB"
