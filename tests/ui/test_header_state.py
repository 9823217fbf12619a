"""The header's server state and how long it has held."""

from __future__ import annotations

from dash.core.snapshot import HttpSnapshot, RunSnapshot
from dash.ui.widgets.header import server_state

T0 = 1_750_000_000.0


def test_the_header_gives_no_duration_to_a_state_found_at_the_first_poll() -> None:
    first = RunSnapshot(now=T0 + 600, http=HttpSnapshot(state="up", since=T0))
    assert server_state(first) == ("server up", "ok", None)
    watched = RunSnapshot(now=T0 + 600, http=HttpSnapshot(state="up", since=T0, since_seen=True))
    assert server_state(watched) == ("server up", "ok", T0)


def test_a_run_without_a_server_log_or_url_says_so() -> None:
    """`kdash --outputs ... --no-http` showed `● server ?`: nothing watches a server, so say
    that and how to; a quiet log whose stamps tell no age is still quiet."""
    from dash.core.snapshot import Liveness

    none = RunSnapshot(now=T0, liveness=Liveness(log="none", http="off"))
    assert server_state(none) == ("no server watched (--log, --url)", "dim", None)
    ahead = RunSnapshot(now=T0, liveness=Liveness(log="quiet", http="off"))
    assert server_state(ahead) == ("log quiet", "warn", None)


def test_a_start_in_progress_says_where_it_is_not_log_quiet_or_no_answer() -> None:
    """A 70B model loads for minutes before its URL answers: the header had said `no answer`
    (or `log quiet`) all that time."""
    from dash.commands.once_text import liveness_text
    from dash.core.snapshot import Liveness, ServerLogSnapshot

    began = {"event": "server_args", "at": T0 - 90.0}
    events = (began, {"event": "load_weights", "phase": "begin", "at": T0 - 80.0},
              {"event": "load_weights", "at": T0 - 30.0})
    live = Liveness(log="quiet", http="down", starting=began)
    snap = RunSnapshot(now=T0, liveness=live, server=ServerLogSnapshot(events=events),
                       http=HttpSnapshot(state="down", reason="connection refused"))
    assert server_state(snap) == ("server starting: weights loaded", "warn", T0 - 90.0)
    assert liveness_text(live, events=events) == \
        "log shows a start in progress (weights loaded), http down"
