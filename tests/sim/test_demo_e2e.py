"""The demo end to end: the real dashboard app, collector and trackers on a running simulation."""

from __future__ import annotations


async def test_dashboard_on_the_simulation_shows_the_restart(make_run):
    from dash.core.state.run import RunState
    from dash.sources.collector import Collector
    from dash.ui.app import DashApp

    run = make_run("oom-crash-restart", speed=200.0, start_epoch=None)
    run.start()
    cfg = run.config()
    app = DashApp(cfg, state=RunState(cfg), collector=Collector(cfg, nvml_module=run.nvml),
                  clock=run.clock(), extra_title="demo: oom-crash-restart")
    async with app.run_test(size=(160, 50)) as pilot:
        # The restart is ready at t=378, ~2 s at 200x; a loaded machine (CI runs two test
        # processes on two cores) can take many times that, so the deadline is generous.
        for _ in range(240):
            await pilot.pause(0.25)
            snap = app.snap
            if snap and snap.server.facts.get("max_total_num_tokens") == 159277 and \
                    snap.server.last_decode and run.sim_now() > 420:
                break
        snap = app.snap
        assert snap is not None
        assert snap.server.facts["max_total_num_tokens"] == 159277
        assert snap.server.facts["avail_mem_gb"] == 5.47
        assert 975 <= snap.server.last_decode["gen_throughput"] <= 1003
        parts = {p.name: p for p in snap.partitions}
        assert parts["B1_glaive"].done == 10000
        assert parts["B2_opencodeinstruct"].done > 1374
        assert snap.server.restarts >= 1
    app.stop_sources()
    run.stop()
