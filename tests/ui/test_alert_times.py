"""The describe screen says when an alert's condition began and when it fired, in words."""

from __future__ import annotations

from rich.style import Style

from dash.core.snapshot import Alert, HistoryEntry, Incident
from dash.ui import fmt
from dash.ui.widgets.alert_screen import describe
from ui.fake_run import NOW, snapshot


def _plateau(since: float) -> Alert:
    return Alert("throughput_plateau", "warn", since, "fell from peak 1316 to plateau 607 tok/s "
                 "(-54%) over 6 min", "median over 2 min", "fp8 KV cache")


def test_a_condition_that_held_before_it_fired_says_both_times() -> None:
    alert = _plateau(NOW - 35 * 60)
    history = (HistoryEntry(alert, NOW - 25 * 60),)
    said = fmt.began(alert, history, NOW)
    assert said == (f"began {fmt.clock(NOW - 35 * 60, NOW)}, fired {fmt.clock(NOW - 25 * 60, NOW)}"
                    " after holding 10 min")
    snap = snapshot(alerts=(alert,), history=history)
    text = describe(snap, Incident(alert), lambda _: Style()).plain
    assert said in text and f"fired {fmt.clock(NOW - 25 * 60, NOW)}, active" in text


def test_an_alert_that_fired_as_it_began_says_since() -> None:
    alert = _plateau(NOW - 600)
    assert fmt.began(alert, (HistoryEntry(alert, NOW - 600),), NOW) == fmt.since(NOW - 600, NOW)
    assert fmt.began(alert, (), NOW) == fmt.since(NOW - 600, NOW)
    earlier = HistoryEntry(alert, NOW - 60, earlier=True)  # another session's firing
    assert fmt.began(alert, (earlier,), NOW) == fmt.since(NOW - 600, NOW)
