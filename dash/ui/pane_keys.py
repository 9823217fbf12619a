"""The dashboard's keys for the log pane and the alerts: what they do, apart from `app.py`.

`LogKeys` shows, switches and filters the log pane; `AlertKeys` acknowledges alerts and opens the
full-screen alert views (one incident described, the history). Both are mixed into `DashApp`,
whose widgets and run state they use.
"""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.widgets import Input

from dash.core.snapshot import RunSnapshot
from dash.ui.widgets.alert_screen import AlertScreen, HistoryScreen
from dash.ui.widgets.alerts import AlertsPanel
from dash.ui.widgets.launches import LaunchesScreen
from dash.ui.widgets.log_pane import LogPane


class LogKeys(App[int]):
    """`l` shows the pane, `c` switches server/client, `/` filters, `d` dims decode lines."""

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "log-filter":
            self.query_one("#log", LogPane).set_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "log-filter":
            self.query_one("#log", LogPane).close_filter(keep=True)
            self.query_one("#partitions").focus()

    def action_toggle_log(self) -> None:
        self._show_log(not self.query_one("#log", LogPane).display)

    def _show_log(self, show: bool) -> None:
        log = self.query_one("#log", LogPane)
        log.display = show
        # The server panel goes by the class (dash.tcss), never by an inline style: an inline
        # `display` would outrank the compact layout's rule that hides it, and after `l` twice
        # the 80x24 screen would show it and cut the top alert's fix.
        self.screen_stack[0].set_class(show, "-log-open")  # compact: the log takes the tables' place
        log.redraw()

    def action_switch_log(self) -> None:
        log = self.query_one("#log", LogPane)
        log.source = "client" if log.source == "server" else "server"
        self._show_log(True)

    def action_filter(self) -> None:
        self._show_log(True)
        self.query_one("#log", LogPane).open_filter()

    def action_close_filter(self) -> None:
        log = self.query_one("#log", LogPane)
        if self.query_one("#log-filter", Input).display:
            log.close_filter(keep=False)
            self.query_one("#partitions").focus()

    def action_dim_decode(self) -> None:
        self.query_one("#log", LogPane).toggle_dim()


class AlertKeys(App[int]):
    """`a` acknowledges, enter on the alerts panel describes an incident, `h` the history."""

    snap: RunSnapshot | None
    state: Any

    def _rerender(self) -> None:  # pragma: no cover - DashApp's
        raise NotImplementedError

    def _back(self, _: object = None) -> None:  # pragma: no cover - DashApp's
        raise NotImplementedError

    def overlay(self) -> AlertScreen | HistoryScreen | LaunchesScreen | None:
        """The full-screen view on top, if one is (it follows the refresh)."""
        screen = self.screen
        return screen if isinstance(screen, (AlertScreen, HistoryScreen, LaunchesScreen)) \
            else None

    def action_acknowledge(self) -> None:
        if self.snap is None:
            return
        self.acknowledge_keys([a.key for a in self.snap.alerts if not a.acknowledged])

    def acknowledge_keys(self, keys: list[str]) -> None:
        """Mark these alerts seen, and show it at once (on the alert screen too)."""
        for key in keys:
            self.state.acknowledge(key)
        self._rerender()
        view = self.overlay()
        if view is not None and self.snap is not None:
            view.show(self.snap)

    def action_open_top_alert(self) -> None:
        """Enter anywhere opens the alert the panel shows in full (the focused panel's own
        enter opens the one selected in it); on a full-screen view it is that view's key."""
        if len(self.screen_stack) == 1:
            self.query_one("#alerts", AlertsPanel).action_open()

    def on_alerts_panel_opened(self, event: AlertsPanel.Opened) -> None:
        if self.snap is not None:
            self.push_screen(AlertScreen(self.snap, event.key), self._back)

    def action_history(self) -> None:
        if self.snap is not None and self.overlay() is None:
            self.push_screen(HistoryScreen(self.snap), self._back)
