"""`--once` on a data-parallel server whose one rank holds the long requests: the imbalance,
not a saturated KV cache (what the dashboard shows over the same files)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from dash.commands.once import collect_once
from dash.core.clock import FakeClock
from dash.sim.run import SimRun

START = 1_780_000_000.0


def test_a_queue_of_a_few_requests_on_eight_ranks_is_not_a_growing_queue(tmp_path: Path) -> None:
    run = SimRun(tmp_path / "run", "dp-imbalance", start_epoch=START)
    run.prepare()
    cfg = dataclasses.replace(run.config(), url="", state_dir=tmp_path / "state")
    for t in (180, 480, 900, 1170):  # moments where the ranks' queue went 1 -> 3
        run.advance_to(t)
        snap, _ = collect_once(cfg, window=0, clock=FakeClock(START + t))
        ids = {a.id for a in snap.alerts}
        # DP5 fills from the first lines (t=20); like the dashboard, --once names the
        # imbalance once the lines show it held rank_imbalance_after_s (180 s).
        assert ("rank_imbalance" in ids) is (t - 20 >= 180), t
        assert "kv_saturated" not in ids, (t, [a.message for a in snap.alerts])
