"""Active alerts as incidents, worst first: the root with its evidence and the fix, and what it
caused folded under it.

The panel takes focus (tab): up/down select an incident, page up/down scroll, enter opens it
full-screen (`AlertScreen`). In the compact layout the incidents show as much as the panel's rows
hold: all in full, else each with its hint, else the selected one's hint, the others' hints that
still fit, in order, and one line each for the rest; without focus the selection is the top incident, so that at 80x24 the top alert's
message and hint are always on screen.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.message import Message

from dash.core.snapshot import SEVERITY_ORDER, Alert, Incident, RunSnapshot
from dash.ui import fmt
from dash.ui.widgets.panel import Panel, line_rows

INDENT = 5
SHORT = {"server_crash": "the crash", "server_down": "server down",
         "server_silent": "the silent log", "outputs_empty": "empty answers"}
"""How the compact layout names an incident's consequences on one line."""


def ordered(alerts: tuple[Alert, ...]) -> list[Alert]:
    """Unacknowledged before acknowledged, then by severity (crit first), then oldest first."""
    return sorted(alerts, key=lambda a: (a.acknowledged, -SEVERITY_ORDER.get(a.severity, 0), a.since))


def incidents_of(snap: RunSnapshot) -> tuple[Incident, ...]:
    """The snapshot's incidents; one per alert when the snapshot has none (a bare snapshot)."""
    if snap.incidents or not snap.alerts:
        return snap.incidents
    return tuple(Incident(a) for a in ordered(snap.alerts))


def _line(text: str = "", style: str | Style = "") -> Text:
    """One line of the panel: a long word folds onto the next row rather than being cut."""
    line = Text(overflow="fold")
    return line.append(text, style) if text else line


def _keys_of(incidents: Iterable[Incident]) -> list[str]:
    return [i.key for i in incidents]


@dataclass(frozen=True, slots=True)
class _Block:
    """Where one incident starts in the panel's text (a line index)."""

    key: str
    line: int


class AlertsPanel(Panel, can_focus=True):
    """Sets `-crit`/`-warn`/`-ok` on itself so dash.tcss can colour the border."""

    WRAP = True
    INDENT = INDENT
    BINDINGS = [
        Binding("up", "select(-1)", "previous alert", show=False),
        Binding("down", "select(1)", "next alert", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("home", "select_end(0)", show=False),
        Binding("end", "select_end(1)", show=False),
        Binding("enter", "open", "describe", show=False),
    ]
    COMPONENT_CLASSES = {"alerts--crit", "alerts--warn", "alerts--info", "alerts--dim",
                         "alerts--ok", "alerts--selected"}

    class Opened(Message):
        """The user asked to see an incident full-screen."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.selected: str | None = None
        """Key of the selected incident (None: the top one)."""
        self._snap: RunSnapshot | None = None
        self._compact = False
        self._blocks: list[_Block] = []
        self._rest: dict[tuple[Incident, str], list[Text]] = {}
        self._fit: tuple[object, dict[str, str]] | None = None
        """The compact layout's modes and what they were worked out for (`_render_incidents`)."""
        """Each incident's lines after its first (the age is in the first): an age ticking
        every second leaves them as they were, and the panel finds them unchanged at once."""

    def notify_style_update(self) -> None:
        self._rest.clear()  # the lines carry the panel's colours
        super().notify_style_update()

    def _st(self, name: str) -> Style:
        return self.part_style(f"alerts--{name}")

    # -- rendering ----------------------------------------------------------------------------

    def show(self, snap: RunSnapshot, compact: bool = False) -> None:
        """Render the incidents of `snap`; compact gives only the selected one its hint."""
        self._snap, self._compact = snap, compact
        incidents = incidents_of(snap)
        live = [i for i in incidents if not i.acknowledged]
        worst = max((SEVERITY_ORDER.get(i.severity, 0) for i in live), default=-1)
        self.set_class(worst == 2, "-crit")
        self.set_class(worst == 1, "-warn")
        self.set_class(worst < 1, "-ok")
        count = sum(1 for a in snap.alerts if not a.acknowledged)
        acked = len(snap.alerts) - count  # listed still, dimmed: the title counts them too
        title = ("alerts" if not snap.alerts else f"alerts ({count} active)" if not acked
                 else f"alerts ({count} active, {acked} ack'd)")
        if self.has_focus and incidents:
            title += "  ↑↓ enter"
        if self.border_title != title:  # setting it, even unchanged, repaints the whole panel
            self.border_title = title
        if not incidents:
            self._blocks = []
            self.show_text(Text("all clear", self._st("ok")))
            return
        keys = [i.key for i in incidents]
        if self.selected not in keys or not self.has_focus:
            self.selected = keys[0]  # unfocused, the top one is the one shown in full
        self.show_lines(self._render_incidents(snap, incidents, compact))

    def _render_incidents(self, snap: RunSnapshot, incidents: tuple[Incident, ...],
                          compact: bool) -> list[Text]:
        kept, self._rest = self._rest, {}
        if not compact:
            return self._render_plan(snap, incidents, dict.fromkeys(_keys_of(incidents), "full"), kept)
        # The compact layout gives every incident as much as the panel's rows hold: all in
        # full, else each with its fix, else the selected one's fix and the others' fixes that
        # fit (at 80x24, two alerts with their fixes fit where one and a cut line were shown)
        # The modes are worked out again only when the incidents, the selection or the size
        # change, not at every tick of an age
        fit = (incidents, self.selected, self.size)
        if self._fit is None or self._fit[0] != fit:
            self._fit = (fit, self._fit_modes(snap, incidents, kept))
        return self._render_plan(snap, incidents, self._fit[1], kept)

    def _fit_modes(self, snap: RunSnapshot, incidents: tuple[Incident, ...],
                   kept: dict[tuple[Incident, str], list[Text]]) -> dict[str, str]:
        height = self.size.height
        for mode in ("full", "hint"):
            every = dict.fromkeys(_keys_of(incidents), mode)
            if self._rows(self._render_plan(snap, incidents, every, kept)) <= height:
                return every
        # else the selected one's fix, and of the rest, in order, each fix that still fits
        modes = {inc.key: "hint" if inc.key == self.selected else "line" for inc in incidents}
        for inc in incidents:
            if modes[inc.key] == "line":
                modes[inc.key] = "hint"
                if self._rows(self._render_plan(snap, incidents, modes, kept)) > height:
                    modes[inc.key] = "line"
        return modes

    def _rows(self, lines: list[Text]) -> int:
        """The screen rows `lines` take at the panel's width, wrapped as the panel wraps them."""
        width = self.size.width
        if width <= 0:
            return len(lines)
        console = self.app.console
        return sum(len(line_rows(console, line, width, True, INDENT) or (line,)) for line in lines)

    def _render_plan(self, snap: RunSnapshot, incidents: tuple[Incident, ...],
                     modes: dict[str, str],
                     kept: dict[tuple[Incident, str], list[Text]]) -> list[Text]:
        """The lines of `incidents`, each in its mode (by key); the lines after each
        first are taken from `kept` (the last render's) where they are there."""
        lines: list[Text] = []
        self._blocks = []
        for inc in incidents:
            self._blocks.append(_Block(inc.key, len(lines)))
            mode = modes[inc.key]
            lines.append(self._first_line(snap, inc, mode))
            rest = self._rest.get((inc, mode)) or kept.get((inc, mode))
            if rest is None:
                rest = self._rest_lines(inc, mode)
            self._rest[inc, mode] = rest
            lines.extend(rest)
        return lines

    def _first_line(self, snap: RunSnapshot, inc: Incident, mode: str) -> Text:
        """An incident's first line: its severity, age and message (in the "line" mode, cut to
        the panel's width)."""
        a = inc.root
        dim = self._st("dim")
        style = dim if a.acknowledged else self._st(a.severity)
        chosen = inc.key == self.selected and self.has_focus
        t = _line()
        t.append("▶" if chosen else " ", self._st("selected") if chosen else dim)
        t.append(f"{a.severity.upper():<4} ", self._st("selected") if chosen else style)
        # The age goes before the message: after it, wrapping could glue it to the last word.
        t.append(f"{fmt.since(a.since, snap.now)} ", dim)
        room = max(20, self._width - len(t.plain) - 1) if mode == "line" else 300
        message = fmt.clean(a.message, 300)
        t.append(message if len(message) <= room else message[:room - 1] + "…",
                 dim if a.acknowledged else "bold")
        if a.acknowledged:
            t.append("  ack'd", dim)
        return t

    def _rest_lines(self, inc: Incident, mode: str) -> list[Text]:
        """The lines after the first: "full" (evidence, hint, each consequence), "hint" (the
        fix, consequences on one line: the compact layout's selected one) or none ("line")."""
        a = inc.root
        dim = self._st("dim")
        lines: list[Text] = []
        if mode == "full" and a.evidence:
            lines.append(_line(f"{'':{INDENT}}{fmt.clean(a.evidence, 400)}", dim))
        if mode != "line" and a.hint:
            lines.append(_line(f"{'':{INDENT}}→ {fmt.clean(a.hint, 800)}"))
        if mode == "full":
            for c in inc.consequences:
                t = _line(f"{'':{INDENT}}↳ ", dim)
                t.append(f"{c.severity.upper()} ", dim if c.acknowledged else self._st(c.severity))
                t.append(fmt.clean(c.message, 200), dim)
                lines.append(t)
        elif inc.consequences and mode == "hint":
            what = ", ".join(SHORT.get(c.id, c.id) for c in inc.consequences)
            lines.append(_line(f"{'':{INDENT}}↳ caused: {what} (enter: all)", dim))
        return lines

    def on_resize(self) -> None:
        super().on_resize()
        self._rerender()  # one-line messages are cut to the width

    def watch_has_focus(self, has_focus: bool) -> None:
        super().watch_has_focus(has_focus)
        self._rerender()  # the selection marker shows while focused

    def _rerender(self) -> None:
        if self._snap is not None:
            self.show(self._snap, self._compact)

    # -- keys ---------------------------------------------------------------------------------

    def _keys(self) -> list[str]:
        return [b.key for b in self._blocks]

    def action_select(self, step: int) -> None:
        keys = self._keys()
        if not keys:
            return
        i = keys.index(self.selected) if self.selected in keys else 0
        self.selected = keys[max(0, min(len(keys) - 1, i + step))]
        self._rerender()
        self._scroll_to_selected()

    def action_select_end(self, end: int) -> None:
        keys = self._keys()
        if keys:
            self.selected = keys[-1 if end else 0]
            self._rerender()
            self._scroll_to_selected()

    def action_page(self, step: int) -> None:
        self.scroll_to(y=self.scroll_offset.y + step * max(1, self.size.height - 1),
                       animate=False)

    def action_open(self) -> None:
        if self.selected is not None and self._blocks:
            self.post_message(self.Opened(self.selected))

    def _scroll_to_selected(self) -> None:
        block = next((b for b in self._blocks if b.key == self.selected), None)
        if block is None:
            return
        top = self.row_of_line(block.line)
        nxt = next((b for b in self._blocks if b.line > block.line), None)
        bottom = self.row_of_line(nxt.line) if nxt is not None else self.virtual_size.height
        height = max(1, self.size.height)
        y = self.scroll_offset.y
        if top < y or bottom - top > height:
            y = top
        elif bottom > y + height:
            y = bottom - height
        self.scroll_to(y=y, animate=False)
