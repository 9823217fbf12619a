"""Active alerts, worst first, each with its evidence and a hint at the fix."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from dash.core.snapshot import SEVERITY_ORDER, Alert, RunSnapshot
from dash.ui import fmt
from dash.ui.widgets.panel import Panel


def ordered(alerts: tuple[Alert, ...]) -> list[Alert]:
    """Unacknowledged before acknowledged, then by severity (crit first), then oldest first."""
    return sorted(alerts, key=lambda a: (a.acknowledged, -SEVERITY_ORDER.get(a.severity, 0), a.since))


class AlertsPanel(Panel):
    """Sets `-crit`/`-warn`/`-ok` on itself so dash.tcss can colour the border.

    Long messages, evidence and hints wrap (indented under the severity) rather than being cut:
    the hint is the point of an alert. The panel scrolls when they do not all fit.
    """

    WRAP = True
    INDENT = 5

    COMPONENT_CLASSES = {"alerts--crit", "alerts--warn", "alerts--info", "alerts--dim", "alerts--ok"}

    def _st(self, name: str) -> Style:
        return self.part_style(f"alerts--{name}")

    def show(self, snap: RunSnapshot, compact: bool = False) -> None:
        """Render the alerts of `snap`; compact leaves out the evidence and hints."""
        alerts = ordered(snap.alerts)
        live = [a for a in alerts if not a.acknowledged]
        worst = max((SEVERITY_ORDER.get(a.severity, 0) for a in live), default=-1)
        self.set_class(worst == 2, "-crit")
        self.set_class(worst == 1, "-warn")
        self.set_class(worst < 1, "-ok")
        title = f"alerts ({len(live)} active)" if alerts else "alerts"
        if self.border_title != title:  # setting it, even unchanged, repaints the whole panel
            self.border_title = title
        if not alerts:
            self.show_text(Text("all clear", self._st("ok")))
            return
        t = Text(overflow="fold")
        dim = self._st("dim")
        for a in alerts:
            style = dim if a.acknowledged else self._st(f"{a.severity}")
            if len(t):
                t.append("\n")
            t.append(f"{a.severity.upper():<4} ", style)
            # The age goes before the message: after it, wrapping could glue it to the last word.
            t.append(f"{fmt.dur(snap.now - a.since):>4} ", dim)
            t.append(f"{fmt.clean(a.message, 300)}", dim if a.acknowledged else "bold")
            if a.acknowledged:
                t.append("  ack'd", dim)
            if compact:
                continue
            t.append(f"\n     {fmt.clean(a.evidence, 400)}", dim)
            t.append(f"\n     → {fmt.clean(a.hint, 400)}")
        self.show_text(t)
