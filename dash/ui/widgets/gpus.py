"""The GPU panel: one row per GPU keyed by index, or why NVML is unavailable."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

from dash.core.snapshot import GpuSnapshot, RunSnapshot
from dash.ui import fmt
from dash.ui.widgets.keyed_table import Cell, KeyedTable
from dash.ui.widgets.panel import Panel

BAR_WIDTH = 14
WARN_FRAC = 0.95
"""Memory use above this fraction of the total is shown as a warning."""


class GpuTable(KeyedTable):
    """Memory bar used/total, utilisation, temperature, power; `g`/`G` move the selection."""

    COMPONENT_CLASSES = KeyedTable.COMPONENT_CLASSES | {
        "gpus--bar", "gpus--bar-warn", "gpus--empty", "gpus--lost",
    }
    FULL_COLUMNS = (
        ("idx", "GPU", 3), ("mem", "memory", BAR_WIDTH), ("used", "used/total GB", 13),
        ("util", "util", 4), ("temp", "temp", 4), ("power", "power W", 9),
    )
    COMPACT_COLUMNS = (
        ("idx", "#", 1), ("mem", "memory", 7), ("used", "GB", 9), ("util", "util", 4),
    )
    BOX_TITLE = ("GPUs", "g/G")

    def _st(self, name: str) -> Style:
        return self.part_style(f"gpus--{name}")

    def show(self, snap: RunSnapshot) -> None:
        """Update rows from the snapshot's GPUs."""
        width = 7 if self.columns_now is self.COMPACT_COLUMNS else BAR_WIDTH
        self.sync({str(g.index): self._row(g, width) for g in snap.gpus.gpus})

    def _row(self, g: GpuSnapshot, width: int) -> dict[str, Cell]:
        if g.lost:
            lost = Text(fmt.clean(g.error or "GPU lost", 40), self._st("lost"))
            return {"idx": str(g.index), "mem": lost, "used": "", "util": "", "temp": "", "power": ""}
        frac = None
        if g.memory_used is not None and g.memory_total:
            frac = g.memory_used / g.memory_total
        filled, empty = fmt.bar(frac, width)
        bar = Text(filled, self._st("bar-warn" if (frac or 0) >= WARN_FRAC else "bar"))
        bar.append(empty, self._st("empty"))
        power = fmt.num(g.power_w)
        if g.power_limit_w:
            power += f"/{g.power_limit_w:.0f}"
        return {
            "idx": str(g.index),
            "mem": bar,
            "used": f"{fmt.gb(g.memory_used)}/{fmt.gb(g.memory_total)}",
            "util": fmt.num(g.util_gpu, "%"),
            "temp": fmt.num(g.temperature_c, "C"),
            "power": power,
        }


class GpuPanel(Vertical):
    """The table, or a banner saying why there is none."""

    def compose(self) -> ComposeResult:
        yield Panel(id="nvml-banner")
        yield GpuTable(id="gpu-table")

    def show(self, snap: RunSnapshot) -> None:
        """Show the GPUs, or the reason NVML is unavailable."""
        gpus = snap.gpus
        banner = self.query_one("#nvml-banner", Panel)
        unavailable = not gpus.available
        if banner.display != unavailable:
            banner.display = unavailable
        if unavailable:
            reason = fmt.clean(gpus.reason or "unknown reason", 200)
            banner.show_text(Text(f"NVML unavailable: {reason}"))
        self.query_one(GpuTable).show(snap)
