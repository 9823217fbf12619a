"""Every alert the simulated scenarios raise shows its whole fix at 80x24, alone on screen
(the compact layout gives the top alert its message and its hint, nothing else)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from test_alert_scenarios import _sim_alerts

from dash.core.snapshot import Alert
from dash.ui.app import DashApp
from ui.fake_run import screen_text, snapshot

SMALL = (80, 24)
SCENARIOS = {"oom-crash-restart": 420, "kv-saturation": 660, "dp-imbalance": 700,
             "stalled-output": 900, "buffered-client-log": 200}


def _last_words(hint: str) -> str:
    """The hint's last words as the screen shows them (wrapping may break before any word)."""
    return " ".join(hint.split()[-2:])[-18:]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_each_alerts_fix_fits_at_80x24(tmp_path: Path, scenario: str,
                                             make_app: Callable[..., DashApp]) -> None:
    fired = _sim_alerts(tmp_path, scenario, SCENARIOS[scenario], step=10.0)
    alerts: dict[str, Alert] = {}
    for _, a in fired:
        alerts.setdefault(a.id, a)
    assert alerts
    for alert in alerts.values():
        app = make_app(snapshot(alerts=(alert,)))
        async with app.run_test(size=SMALL) as pilot:
            await pilot.pause()
            screen = screen_text(app)
            text = " ".join(re.sub(r"[│┃]", " ", screen).split())  # rows joined, no borders
            assert _last_words(alert.hint) in text, f"{alert.id}: fix cut at 80x24\n{screen}"


async def test_a_resize_lays_out_for_the_new_size(make_app: Callable[..., DashApp]) -> None:
    """Shrunk to 80x24, the top alert's fix is on screen at once; grown again, the full
    layout comes back (the layout once followed the size before the resize)."""
    alert = Alert("server_oom", "crit", 0.0, "server OOM: torch.OutOfMemoryError",
                  "at 12:00:00 (line 10)", "lower --mem-fraction-static to 0.80")
    app = make_app(snapshot(alerts=(alert,)))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert not app.compact
        await pilot.resize_terminal(*SMALL)
        await pilot.pause()
        assert app.compact
        assert "lower --mem-fraction-static to 0.80" in screen_text(app)
        await pilot.resize_terminal(160, 45)
        await pilot.pause()
        assert not app.compact


async def test_two_alerts_that_fit_both_show_their_fix_at_80x24(
        make_app: Callable[..., DashApp]) -> None:
    """The compact layout gives every alert its fix when the panel's rows hold them (two were
    shown as one fix and one cut line above four blank rows); too many, and the rest are one
    line each, the top one's fix whole."""
    crit = Alert("server_oom", "crit", 0.0, "CUDA out of memory in the server",
                 "at 12:00:00 (line 10)", "lower --mem-fraction-static to 0.80")
    warn = Alert("gpu_headroom_low", "warn", 0.0, "GPU memory headroom is low",
                 "avail mem after CUDA graph 0.82 GB", "leave 2 GB free: lower the share")
    app = make_app(snapshot(alerts=(crit, warn)))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "lower --mem-fraction-static to 0.80" in text
        assert "leave 2 GB free: lower the share" in text
    many = tuple(Alert(f"rule_{i}", "warn", float(i), f"warning number {i}", "evidence",
                       f"fix number {i} " + "word " * 20) for i in range(6))
    app = make_app(snapshot(alerts=(crit, *many)))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "lower --mem-fraction-static to 0.80" in text and "warning number 0" in text
        assert "fix number 0" not in text


async def test_the_fixes_that_fit_are_shown_when_not_all_do(
        make_app: Callable[..., DashApp]) -> None:
    crit = Alert("server_oom", "crit", 0.0, "CUDA out of memory in the server",
                 "at 12:00:00 (line 10)", "lower --mem-fraction-static to 0.80")
    short = Alert("rule_a", "warn", 1.0, "warning a", "evidence", "short fix a")
    long = tuple(Alert(f"rule_{c}", "warn", 2.0 + i, f"warning {c}", "evidence",
                       f"long fix {c} " + "word " * 40) for i, c in enumerate("bcd"))
    app = make_app(snapshot(alerts=(crit, short, *long)))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "lower --mem-fraction-static to 0.80" in text and "short fix a" in text
        assert "warning b" in text and "long fix b" not in text
