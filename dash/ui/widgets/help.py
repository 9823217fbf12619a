"""The help screen: every key, one line each."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str], ...] = (
    ("q  ctrl+c", "quit"),
    ("?", "this help (any key closes it)"),
    ("1 - 9  ↑ ↓", "select a partition (↑ ↓: in the focused table)"),
    ("o", "the selected partition's last sample (n/p newer/older, f fold, esc)"),
    ("g / G", "next / previous GPU (memory chart follows)"),
    ("tab", "move focus: partitions, GPUs, log, alerts"),
    ("enter", "on the alerts: the selected one in full"),
    ("h", "alert history: this session and earlier ones"),
    ("R", "ranks: each DP rank's (vLLM engine's) latest figures"),
    ("s", "next server (several logs): charts, facts follow"),
    ("a", "acknowledge the active alerts"),
    ("L", "launches: the server's starts side by side"),
    ("l  c", "log pane: show / hide; server / client log"),
    ("/  d", "log pane: filter; dim the decode-stats lines"),
    ("PgUp PgDn", "log, alerts: scroll; home/end: top/follow"),
    ("v", "compact layout: show the next two charts"),
    ("+ / -", "chart time window: 5m, 15m, 1h, all"),
    ("p", "pause / resume the screen (data is still read)"),
    ("r", "reset the throughput peak"),
    ("ctrl+l", "redraw the whole screen (after a tmux reattach)"),
)


def help_text() -> Text:
    """The key list as text."""
    t = Text()
    t.append("kdash keys\n", "bold")
    for key, what in KEYS:
        t.append(f"  {key:<13}", "bold")
        t.append(f"{what}\n")
    t.append("ctrl+a and ctrl+b are left to tmux.", "dim")
    return t


class HelpScreen(ModalScreen[None]):
    """Lists every key; closes on any key."""

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static(help_text(), id="help-text")

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        self.dismiss(None)
