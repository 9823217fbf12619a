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
