"""The alerts at 80x24 and 160x45: focus, scroll, describe, the history, chart cycling; and the
server's state on screen from a real RunState (a live log with no server, a recovery)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from dash.core.config import Config
from dash.core.snapshot import Alert
from dash.core.state.http_state import HttpSample
from dash.core.state.run import RunState
from dash.ui.app import DashApp
from dash.ui.widgets.alert_screen import AlertScreen, HistoryScreen
from dash.ui.widgets.alerts import AlertsPanel
from dash.ui.widgets.chart import BrailleChart
from ui.conftest import build_app
from ui.fake_run import NOW, FrozenState, alerts, screen_text, snapshot

SMALL = (80, 24)
BIG = (160, 45)
MakeApp = Callable[..., DashApp]


def _many_alerts() -> tuple[Alert, ...]:
    """Five alerts, the OOM with a long hint among them: more than a small screen shows."""
    oom = Alert("server_oom", "crit", NOW - 700.0,
                "CUDA out of memory in the server after a prefill of 32768 new tokens",
                "OOM at 2025-06-15T17:55:00 (line 9000); avail mem after CUDA graph 0.82 GB",
                "Lower --mem-fraction-static (now 0.93; try 0.88) to leave more headroom "
                "outside the KV cache; the server usually needs a restart after an OOM.",
                line="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.")
    crash = Alert("server_crash", "crit", NOW - 699.0, "server crashed: SIGQUIT",
                  "3 crash line(s)", "Read the traceback.")
    buffered = Alert("client_log_buffered", "warn", NOW - 300.0,
                     "the client log is empty (0 bytes) while B2 grew 1374 -> 1399 lines",
                     "client log 0 bytes", "run the client with `python -u` or PYTHONUNBUFFERED=1")
    stalled = tuple(Alert("output_stalled", "warn", NOW - 900.0 - i,
                          f"B{i}: no new output for 15 min", "", "Check the client log.",
                          subject=f"B{i}") for i in range(3, 7))
    return (buffered, crash, oom, *alerts()[:2], *stalled)


async def test_the_top_alerts_message_and_hint_are_on_an_80x24_screen(make_app: MakeApp) -> None:
    app = make_app(snapshot(alerts=_many_alerts()))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "CUDA out of memory in the server" in text  # the root cause, first
        assert "--mem-fraction-static" in text  # and its fix
        assert "caused: the crash" in text  # the crash folded under it
        assert "tab focus" in text and "h history" in text  # the keys that reach the rest


async def test_with_the_log_open_at_80x24_the_top_alerts_fix_still_shows(
        make_app: MakeApp) -> None:
    app = make_app(snapshot(alerts=_many_alerts()))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("l")
        await pilot.pause()
        text = screen_text(app)
        assert "server log" in text  # the pane is open
        assert "CUDA out of memory in the server" in text and "--mem-fraction-static" in text
        await pilot.press("l")
        await pilot.pause()
        text = screen_text(app)
        assert "partitions" in text  # closed: the tables are back
        # and the layout is the one it started with: no server facts beside the alerts, whose
        # fix still fits (an inline style once brought the server panel back here)
        assert "max tokens" not in text and "--mem-fraction-static" in text
        assert not app.query_one("#server").display
        await pilot.press("L", "c", "escape")  # the log opened from a screen on top
        await pilot.pause()
        text = screen_text(app)
        assert "client log" in text and "--mem-fraction-static" in text


async def test_tab_focuses_the_alerts_which_scroll_and_open_at_80x24(make_app: MakeApp) -> None:
    app = make_app(snapshot(alerts=_many_alerts()))
    async with app.run_test(size=SMALL) as pilot:
        panel = app.query_one(AlertsPanel)
        for _ in range(4):
            if app.focused is panel:
                break
            await pilot.press("tab")
        assert app.focused is panel
        await pilot.pause()
        assert "↑↓ enter" in screen_text(app)
        for _ in range(7):
            await pilot.press("down")
        assert panel.selected is not None and panel.selected != "server_oom"
        assert panel.scroll_offset.y > 0  # the last ones are below the panel's fold
        selected = next(a for a in _many_alerts() if a.key == panel.selected)
        assert selected.hint[:30] in screen_text(app)  # the selected one shows its fix
        await pilot.press("home", "enter")
        assert isinstance(app.screen, AlertScreen)
        text = screen_text(app)
        for part in ("CUDA out of memory", "Evidence", "Log line", "torch.OutOfMemoryError",
                     "What to do", "--mem-fraction-static", "caused by the above",
                     "server crashed: SIGQUIT"):
            assert part in text, part
        await pilot.press("escape")
        assert not isinstance(app.screen, AlertScreen)
        assert "CUDA out of memory" in screen_text(app)


async def test_the_describe_screen_acknowledges_its_incident(make_app: MakeApp) -> None:
    state = FrozenState(snapshot(alerts=_many_alerts()))
    app = make_app(state=state)
    async with app.run_test(size=BIG) as pilot:
        app.query_one(AlertsPanel).focus()
        await pilot.press("enter", "a")
        assert sorted(state.acknowledged) == ["server_crash", "server_oom"]
        assert "acknowledged" in screen_text(app)


async def test_enter_without_focusing_the_alerts_opens_the_top_one(make_app: MakeApp) -> None:
    app = make_app(snapshot(alerts=_many_alerts()))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, AlertScreen)
        assert "CUDA out of memory in the server" in screen_text(app)  # the root cause
        await pilot.press("escape", "L", "enter", "escape", "R", "enter", "escape", "o", "enter")
        await pilot.pause()  # enter on the other full-screen views is theirs, never an error


async def test_h_opens_the_history_of_this_and_earlier_sessions(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen)
        text = screen_text(app)
        assert "This session: 2 alert(s)" in text and "kv_saturated" in text
        assert "Earlier sessions (the history file): 2 alert(s)" in text
        assert "16:06 OOM (mem fraction 0.93" in text  # the day before's incident line
        assert "→ now (active)" in text
        await pilot.press("end")
        assert "server_oom" in screen_text(app)
        await pilot.press("h")
        assert not isinstance(app.screen, HistoryScreen)


async def test_the_ages_say_since_when(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        assert "since 17:51 (15 min)" in screen_text(app)  # not a bare "15m"


async def test_v_cycles_the_charts_of_the_compact_layout(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        def shown() -> list[str]:
            return [c.id or "" for c in app.query(BrailleChart) if c.display]

        assert shown() == ["chart-throughput", "chart-requests"]
        seen = [shown()]
        for i in range(4):
            await pilot.press("v")
            await pilot.pause()
            seen.append(shown())
            if i == 1:
                assert "GPU 0 memory" in screen_text(app) and "token usage" in screen_text(app)
        assert seen[1] == ["chart-requests", "chart-usage"]
        assert seen[2] == ["chart-usage", "chart-gpu-mem"]
        assert seen[4] == seen[0]  # round again


async def test_a_two_series_chart_has_a_legend_without_colour(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        assert "─ running 125  ┈ queued 225" in screen_text(app)


def _live_state(**cfg: object) -> RunState:
    state = RunState(Config(log="server.log", **cfg))  # type: ignore[arg-type]
    records = [{"kind": "decode", "line": i, "ts": None, "engine": "sglang", "rank": "TP0",
                "running_req": 40, "queue_req": 2, "tokens": 9000, "token_usage": 0.5,
                "gen_throughput": 983.0} for i in range(1, 4)]
    state.feed_server_log(records, NOW - 120.0)
    state.feed_server_log(records, NOW - 1.0)  # and more as kdash follows: the log is live
    return state


def _refused(at: float) -> HttpSample:
    return HttpSample(at=at, reachable=False, error="connection refused",
                      url="http://127.0.0.1:30000", url_source="default",
                      url_why="SGLang's default port; no server_args in the log")


async def test_a_live_log_with_no_server_on_the_default_port_shows_no_crit() -> None:
    state = _live_state()
    for i in range(40):  # a minute and a half of refused polls
        state.http.apply(_refused(NOW - 80 + 2 * i), NOW - 80 + 2 * i)
    app = build_app(state=state)
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "server running (log live)" in text and "no answer at 127.0.0.1:30000" in text
        assert "server down" not in text and "CRIT" not in text
        assert "983 tok/s" in text and "last 983" not in text  # current, not stale
        ids = {a.id: a.severity for a in app.snap.alerts} if app.snap else {}
        assert ids == {"http_unreachable": "warn"}
        assert "--no-http" in app.snap.alerts[0].hint if app.snap else False


async def test_recovery_clears_server_down_at_once() -> None:
    state = RunState(Config(url="http://127.0.0.1:8000"))
    up = HttpSample(at=NOW - 300, reachable=True, latency_s=0.01, url="http://127.0.0.1:8000")
    state.http.apply(up, NOW - 300)
    for i in range(5):
        down = dataclasses.replace(_refused(NOW - 100 + i), url="http://127.0.0.1:8000")
        state.http.apply(down, NOW - 100 + i)
    app = build_app(state=state)
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        assert app.snap is not None
        down_alert = next(a for a in app.snap.alerts if a.id == "server_down")
        assert down_alert.severity == "crit"  # it answered before
        assert "last answered" in down_alert.evidence and "never" not in down_alert.evidence
        assert "server down" in screen_text(app)
        state.http.apply(dataclasses.replace(up, at=NOW), NOW)
        app.refresh_state()  # the next tick, not a minute of hysteresis later
        await pilot.pause()
        assert not app.snap.alerts
        assert "server up" in screen_text(app) and "all clear" in screen_text(app)


async def test_the_oom_demo_still_names_the_oom_20_simulated_minutes_after_the_restart(
        tmp_path) -> None:
    from dash.core.clock import FakeClock
    from dash.sim import SimRun
    from dash.sources.collector import Collector, apply_files, apply_gpus

    t0 = 1_780_000_000.0
    run = SimRun(tmp_path, "oom-crash-restart", start_epoch=t0)
    cfg = dataclasses.replace(run.config(), url="")
    collector, state = Collector(cfg, nvml_module=run.nvml), RunState(cfg)
    until = 360 + 20 * 60  # the restart, and twenty minutes
    try:
        for t in range(0, until + 1, 10):
            run.advance_to(t)
            apply_files(state, collector.read_files(), t0 + t)
            apply_gpus(state, collector.sample_gpus(), t0 + t)
            state.tick(t0 + t)
    finally:
        collector.close()
    app = DashApp(cfg, state=state, clock=FakeClock(t0 + until), live=False,
                  cpu_meter=lambda: 1.0)
    for size in (BIG, SMALL):
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            text = screen_text(app)
            assert "OOM (mem fraction 0.93, 0.82 GB after CUDA" in text
            assert "-> restarted" in text and "with 0.88" in text and "(20 min)" in text
        app = DashApp(cfg, state=state, clock=FakeClock(t0 + until), live=False,
                      cpu_meter=lambda: 1.0)


async def test_the_title_counts_the_acknowledged_alerts_it_still_lists(make_app: MakeApp) -> None:
    many = _many_alerts()
    acked = tuple(dataclasses.replace(a, acknowledged=True) if a.id == "output_stalled" else a
                  for a in many)
    app = make_app(snapshot(alerts=acked))
    async with app.run_test(size=BIG):
        title = str(app.query_one(AlertsPanel).border_title)
        assert title.startswith(f"alerts ({len(many) - 4} active, 4 ack'd)"), title
