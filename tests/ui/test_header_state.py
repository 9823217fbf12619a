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


def test_with_several_servers_the_header_names_the_one_that_is_not_well() -> None:
    """A PD pair whose decode log went quiet is not `server up` because the prefill server,
    the first, is: the worst state is said with its server's name."""
    import dataclasses

    from dash.core.snapshot import Liveness
    from dash.ui.widgets.header import servers_state
    from ui.fake_run import pd_snapshot

    pd = pd_snapshot()
    well = Liveness(log="live", http="off")
    quiet = Liveness(log="quiet", http="off", log_age_s=720.0)
    both = dataclasses.replace(pd, liveness=well, server_liveness=(well, well),
                               http=HttpSnapshot())
    assert servers_state(both) == server_state(both.for_server(0))
    one = dataclasses.replace(both, server_liveness=(well, quiet))
    label, level, _ = servers_state(one)
    assert (label, level) == ("decode: log quiet 12m", "warn")
    two = dataclasses.replace(both, liveness=quiet, server_liveness=(quiet, quiet))
    assert servers_state(two)[0] == "prefill: log quiet 12m (and 1 more)"


def test_the_uptime_is_a_running_servers_only() -> None:
    """An old log of retractions alone (sglang#4184), its URL refused: the header said
    `no answer (connection refused)  uptime 635d15h`, as if the server had run since."""
    from dash.core.snapshot import Liveness, ServerLogSnapshot
    from dash.ui.widgets.header import uptime_from

    old = ServerLogSnapshot(started_at=T0 - 635 * 86400.0)
    refused = RunSnapshot(now=T0, server=old, liveness=Liveness(log="quiet", http="down"),
                          http=HttpSnapshot(state="down", reason="connection refused"))
    label, level, since = server_state(refused)
    assert label == "no answer (connection refused)"
    assert uptime_from(refused, level, since) is None
    started = ServerLogSnapshot(started_at=T0 - 3 * 3600.0)
    idle = RunSnapshot(now=T0, server=started, liveness=Liveness(log="quiet", http="up"),
                       http=HttpSnapshot(state="up"))
    assert uptime_from(idle, *server_state(idle)[1:]) == T0 - 3 * 3600.0
    live = RunSnapshot(now=T0, server=started, liveness=Liveness(log="live", http="off"))
    assert server_state(live)[2] == T0 - 3 * 3600.0  # `server running (log live) for 3h`
    assert uptime_from(live, *server_state(live)[1:]) is None  # not said twice
    quiet = RunSnapshot(now=T0, server=started, liveness=Liveness(log="quiet", http="off",
                                                                  log_age_s=600.0))
    assert uptime_from(quiet, *server_state(quiet)[1:]) is None
