"""The help screen: every key, one line each."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str], ...] = (
    ("q  ctrl+c", "quit"),
    ("?", "this help (↑ ↓ scroll it, any other key closes it)"),
    ("1 - 9  ↑ ↓", "select a partition (↑ ↓: in the focused table)"),
    ("o", "the selected partition's last sample (n/p newer/older, f fold, esc)"),
    ("g / G", "next / previous GPU (memory chart follows)"),
    ("tab", "move focus: partitions, GPUs, log, alerts"),
    ("enter", "the top alert in full (on the focused alerts: the selected one)"),
    ("h", "alert history: this session and earlier ones"),
    ("R", "ranks: each DP rank's (vLLM engine's) latest figures"),
    ("s", "next server (several logs): charts, facts follow"),
    ("a", "acknowledge the active alerts"),
    ("L", "launches: the server's starts side by side"),
    ("l  c", "log pane: show / hide; server / client log"),
    ("/  d", "log pane: filter; dim the decode-stats lines"),
    ("PgUp PgDn", "log, alerts: scroll; home/end: top/follow"),
    ("← →", "log pane: long lines left / right"),
    ("v", "compact layout: move the two charts shown one along"),
    ("+ / -", "chart time window: 5m, 15m, 1h, all"),
    ("p", "pause / resume the screen (data is still read)"),
    ("r", "reset the throughput peak"),
    ("ctrl+l", "redraw the whole screen (after a tmux reattach)"),
)


def help_text(more: tuple[str, Sequence[tuple[str, str]]] | None = None) -> Table:
    """The key list: a key column, and descriptions that wrap under themselves; `more` adds a
    titled section (the replay's keys), whose keys are listed there only: a key it takes over
    (the replay's ← →) is not also listed with the meaning it no longer has."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    table.add_row(Text("kdash keys", "bold"), "")
    taken = {key for key, _ in more[1]} if more is not None else set()
    for key, what in KEYS:
        if key not in taken:
            table.add_row(key, what)
    table.add_row("", Text("ctrl+a and ctrl+b are left to tmux.", "dim"))
    if more is not None:
        title, keys = more
        table.add_row("", "")
        table.add_row(Text(title, "bold"), "")
        for key, what in keys:
            table.add_row(key, what)
    return table


SCROLL_KEYS = {"up": -1, "down": 1, "pageup": -10, "pagedown": 10}


class HelpScreen(ModalScreen[None]):
    """Lists every key; arrows and page keys scroll it (80x24 does not hold it all), any other
    key closes it."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(self.text(), id="help-text")

    def text(self) -> Table:
        return help_text()

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        step = SCROLL_KEYS.get(event.key)
        if step is None:
            self.dismiss(None)
            return
        box = self.query_one("#help-box", VerticalScroll)
        box.scroll_relative(y=step, animate=False)
