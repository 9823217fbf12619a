"""Full-screen views of alerts: one incident described (enter on the alerts panel), like k9s's
`describe`, and the alert history (`h`): this session's alerts and earlier sessions' ones.

Both render the snapshot they are given and follow the app's refresh (`show`); they scroll with
up/down, page up/down, home/end, and close with escape or q.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen

from dash.core.snapshot import Alert, HistoryEntry, Incident, RunSnapshot
from dash.ui import fmt
from dash.ui.widgets.alerts import incidents_of
from dash.ui.widgets.panel import SCROLL_BINDINGS, Panel

CLOSE_KEYS = "escape,q"


class TextView(Panel, can_focus=True):
    """A scrolling text panel that keeps focus (the screen's only widget)."""

    WRAP = True
    INDENT = 2
    COMPONENT_CLASSES = {"view--crit", "view--warn", "view--info", "view--dim"}

    BINDINGS = SCROLL_BINDINGS

    def view_style(self, name: str) -> Style:
        """A severity's (or "dim"'s) style from the stylesheet."""
        return self.part_style(f"view--{name}")


def _clock(t: float | None, now: float) -> str:
    return "-" if t is None else fmt.clock(t, now)


Styles = Callable[[str], Style]
"""Severity ("crit", "warn", "info") or "dim" -> the style the stylesheet gives it."""


def _section(t: Text, title: str, body: str | None, style: str | Style = "") -> None:
    if not body:
        return
    t.append(f"\n\n{title}\n", "bold underline")
    t.append(fmt.clean(body, 2000), style)


def describe(snap: RunSnapshot, inc: Incident, st: Styles) -> Text:
    """Everything about one incident: each alert's message, evidence, log line, hint, and when
    it fired and cleared before."""
    t = Text()
    for n, a in enumerate(inc.alerts):
        if n:
            t.append("\n\n" + "─" * 40 + "\ncaused by the above:\n", st("dim"))
        _alert(t, snap, a, st)
    return t


def _alert(t: Text, snap: RunSnapshot, a: Alert, st: Styles) -> None:
    t.append(f" {a.severity.upper()} ", st(a.severity))
    t.append(f"  {a.id}" + (f" [{fmt.clean(a.subject, 40)}]" if a.subject else ""), "bold")
    t.append(f"   {fmt.since(a.since, snap.now)}" + ("   acknowledged" if a.acknowledged else ""),
             st("dim"))
    t.append(f"\n{fmt.clean(a.message, 600)}", "bold")
    _section(t, "Evidence", a.evidence)
    _section(t, "Log line", a.line, "italic")
    _section(t, "What to do", a.hint)
    past = [e for e in snap.history if e.alert.key == a.key]
    if past:
        t.append("\n\nHistory\n", "bold underline")
        for e in reversed(past[-20:]):
            t.append_text(_when(e, snap.now, st))
            t.append("\n")
        t.rstrip()


def _when(e: HistoryEntry, now: float, st: Styles) -> Text:
    cleared = "active" if e.cleared_at is None else f"cleared {_clock(e.cleared_at, now)}"
    if e.cleared_at is None and e.earlier:
        cleared = "active when that kdash ended"
    t = Text(f"fired {_clock(e.fired_at, now)}, {cleared}")
    if e.earlier:
        t.append("  (an earlier session)", st("dim"))
    return t


class AlertScreen(Screen[None]):
    """One incident, full-screen: `a` acknowledges it, escape or q goes back."""

    BINDINGS = [Binding(CLOSE_KEYS, "close", "back"),
                Binding("enter", "close", show=False),
                Binding("a", "acknowledge", "acknowledge")]

    def __init__(self, snap: RunSnapshot, key: str) -> None:
        super().__init__()
        self.key = key
        self._snap = snap

    def compose(self) -> ComposeResult:
        yield TextView(id="describe")

    def on_mount(self) -> None:
        view = self.query_one(TextView)
        view.border_title = "alert  (esc back  a acknowledge  ↑↓ PgUp PgDn scroll)"
        view.focus()
        self.show(self._snap)

    def show(self, snap: RunSnapshot) -> None:
        """Render the incident from `snap` (it may have gained or lost consequences)."""
        self._snap = snap
        view = self.query_one(TextView)
        st = view.view_style
        inc = next((i for i in incidents_of(snap) if i.key == self.key), None)
        if inc is None:
            past = [e for e in snap.history if e.alert.key == self.key]
            text = Text("This alert has cleared.", "bold")
            if past:
                text.append("\n\n")
                text.append_text(describe(snap, Incident(past[-1].alert), st))
        else:
            text = describe(snap, inc, st)
        view.show_text(text)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_acknowledge(self) -> None:
        inc = next((i for i in incidents_of(self._snap) if i.key == self.key), None)
        if inc is not None:
            self.app.acknowledge_keys([a.key for a in inc.alerts])  # type: ignore[attr-defined]


def history_text(snap: RunSnapshot, st: Styles) -> Text:
    """Every alert of this session, newest first, then the earlier sessions' from the file."""
    t = Text()
    now_entries = [e for e in snap.history if not e.earlier]
    earlier = [e for e in snap.history if e.earlier]
    t.append(f"This session: {len(now_entries)} alert(s), newest first\n", "bold underline")
    if not now_entries:
        t.append("none yet\n", st("dim"))
    for e in reversed(now_entries):
        _entry(t, e, snap.now, st)
    t.append(f"\nEarlier sessions (the history file): {len(earlier)} alert(s)\n",
             "bold underline")
    if not earlier:
        t.append("none\n", st("dim"))
    for e in reversed(earlier):
        _entry(t, e, snap.now, st)
    t.rstrip()
    return t


BODY = "    "
"""Indent of an entry's message, evidence and hint under its first line (`HistoryView.INDENT`)."""


def _entry(t: Text, e: HistoryEntry, now: float, st: Styles) -> None:
    a = e.alert
    if e.cleared_at is not None:
        until = _clock(e.cleared_at, now)
    else:
        until = "when that kdash ended" if e.earlier else "now (active)"
    t.append(f"{_clock(e.fired_at, now)} → {until}  ", "bold")
    t.append(f"{a.severity.upper()}", st(a.severity))
    t.append(f" {a.id}" + (f" [{fmt.clean(a.subject, 30)}]" if a.subject else ""), "bold")
    t.append(f"\n{BODY}{fmt.clean(a.message, 400)}\n")
    if a.evidence:
        t.append(f"{BODY}{fmt.clean(a.evidence, 400)}\n", st("dim"))
    if a.hint:
        t.append(f"{BODY}→ {fmt.clean(a.hint, 800)}\n")


class HistoryView(TextView):
    """The history's text: wrapped lines hang under an entry's body."""

    INDENT = len(BODY)


class HistoryScreen(Screen[None]):
    """The alert history, full-screen: escape, q or h goes back."""

    BINDINGS = [Binding(CLOSE_KEYS + ",h", "close", "back")]

    def __init__(self, snap: RunSnapshot) -> None:
        super().__init__()
        self._snap = snap

    def compose(self) -> ComposeResult:
        yield HistoryView(id="history")

    def on_mount(self) -> None:
        view = self.query_one(TextView)
        view.border_title = "alert history  (esc back  ↑↓ PgUp PgDn scroll)"
        view.focus()
        self.show(self._snap)

    def show(self, snap: RunSnapshot) -> None:
        self._snap = snap
        view = self.query_one(TextView)
        view.show_text(history_text(snap, view.view_style))

    def action_close(self) -> None:
        self.dismiss(None)
