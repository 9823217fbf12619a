"""The partition table (progress of each output file) and the selected partition's details."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from dash.core.snapshot import PartitionSnapshot, RunSnapshot
from dash.ui import fmt
from dash.ui.widgets.keyed_table import Cell, KeyedTable
from dash.ui.widgets.panel import Panel

BAR_WIDTH = 16
STATUS_LEVEL = {"done": "ok", "running": "ok", "stalled": "crit", "pending": "dim", "counting": "dim"}


class PartitionTable(KeyedTable):
    """One row per partition, keyed by name; 1-9 and up/down move the selection."""

    COMPONENT_CLASSES = KeyedTable.COMPONENT_CLASSES | {
        "parts--bar", "parts--empty", "parts--ok", "parts--crit", "parts--dim",
    }
    FULL_COLUMNS = (
        ("n", "#", 1), ("name", "partition", 22), ("done", "done/total", 11), ("pct", "%", 4),
        ("bar", "progress", BAR_WIDTH), ("rate", "/min", 5), ("eta", "ETA", 7),
        ("status", "status", 8),
    )
    COMPACT_COLUMNS = (
        ("n", "#", 1), ("name", "partition", 11), ("done", "done/total", 11),
        ("eta", "ETA", 6), ("status", "status", 7),
    )

    def _st(self, name: str) -> Style:
        return self.part_style(f"parts--{name}")

    def show(self, snap: RunSnapshot) -> None:
        """Update rows from the snapshot's partitions."""
        rows: dict[str, dict[str, Cell]] = {}
        for i, p in enumerate(snap.partitions):
            rows[p.name] = self._row(i, p)
        self.sync(rows)

    def _row(self, i: int, p: PartitionSnapshot) -> dict[str, Cell]:
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
            "pct": "-" if pct is None else f"{pct:.0f}%",
            "bar": bar,
            "rate": fmt.num(p.rate_per_min, digits=1),
            "eta": "done" if p.status == "done" else fmt.dur(p.eta_s),
            "status": Text(status, self._st(STATUS_LEVEL.get(p.status, "dim"))),
        }


class PartitionDetails(Panel):
    """Path, lines at start vs written since, last write and recent rate of one partition."""

    def show(self, snap: RunSnapshot, name: str | None) -> None:
        """Describe the partition called `name` (the table's selection)."""
        p = next((p for p in snap.partitions if p.name == name), None)
        if p is None:
            self.show_text(Text("no partitions yet: pass --outputs 'out/*.jsonl'", "dim"))
            return
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(fmt.clean(p.name, 60), "bold")
        t.append(f"  {fmt.clean(p.path, 200)}\n", "dim")
        t.append(f"at start {p.at_start:,}  written since {p.written:,}  done {p.done:,}")
        if p.total:
            t.append(f" of {p.total:,} ({p.total - p.done:,} left)")
        t.append("\nlast write ")
        t.append("-" if p.last_write is None else f"{fmt.dur(snap.now - p.last_write)} ago")
        t.append(f"  rate {fmt.num(p.rate_per_min, '/min', 1)}")
        t.append(f"  recent {fmt.num(p.recent_rate_per_min, '/min', 1)}")
        if p.eta_low_s is not None and p.eta_high_s is not None:
            t.append(f"  ETA {fmt.dur(p.eta_low_s)}..{fmt.dur(p.eta_high_s)}")
        self.show_text(t)
