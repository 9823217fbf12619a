"""The describe screen says when an alert's condition began and when it fired, in words."""

from __future__ import annotations

from rich.style import Style

from dash.core.snapshot import Alert, HistoryEntry, Incident
from dash.ui import fmt
from dash.ui.widgets.alert_screen import describe
from ui.fake_run import NOW, snapshot


def _plateau(since: float) -> Alert:
    return Alert("throughput_plateau", "warn", since, "fell from peak 1316 to plateau 607 tok/s "
                 "(-54%) over 6 min", "median over 2 min", "fp8 KV cache", hold_s=600.0)


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


def test_an_alert_read_from_an_old_log_says_when_it_was_in_the_log_not_that_it_held() -> None:
    """An OOM fires at once; seen weeks after it happened, it was read late, not held."""
    began = NOW - 51 * 86400
    oom = Alert("server_oom", "crit", began, "CUDA out of memory", "the line", "lower it")
    said = fmt.began(oom, (HistoryEntry(oom, NOW - 5),), NOW)
    assert said == (f"began {fmt.clock(began, NOW)} (51.0 days ago, in the log), "
                    f"fired {fmt.clock(NOW - 5, NOW)} when read")
    assert "holding" not in said
