"""The user's four launches (the `tuning-session` scenario), end to end.

Through the live dashboard (the real app, collector, follower and trackers, the log rewritten
from empty at each restart, read as it is written; the kdash quit mid-session and another one
started on the same log, which shows what the first saw), then `kdash --once --json` by a later
kdash (the earlier launches come from the state directory; another log path inherits none), then
`kdash launches` on the same four files, split and appended: the same table, the changed
arguments, the OOM of the second launch and the capacity figures exact.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from dash.commands.launches import launches_of
from dash.commands.once import run_once
from dash.core.clock import FakeClock
from dash.core.config import Config
from dash.core.state.run import RunState
from dash.core.views.launch_advice import advice
from dash.core.views.launch_table import table
from dash.sim.run import SimRun
from dash.sources.collector import Collector
from dash.sources.launch_store import remembered
from dash.ui.app import DashApp
from dash.ui.messages import FilesObserved
from dash.ui.widgets.launches import LaunchTableView
from dash.ui.widgets.server import ServerPanel

pytestmark = pytest.mark.slow

START = 1_780_000_000.0
STEP_S = 10
END_S = 2400
RESTART_AT = 1200
"""The first kdash quits in the middle of the third launch."""
SPLIT_AT = (490, 770, 1870)
"""Just before each rewrite: the file then holds one whole launch."""
CAPACITY = [(116_171, 8.34), (212_000, 0.82), (159_277, 5.47), (376_029, 3.52)]


async def _live(run: SimRun, cfg: Config, split: Path, since: int, until: int) -> dict[str, Any]:
    """One kdash watching the run from `since` to `until` (it remembers what one before saw)."""
    clock = FakeClock(START + since)
    collector = Collector(cfg)
    state = RunState(cfg)
    keepers = remembered(state, cfg)
    app = DashApp(cfg, state=state, clock=clock, live=False, launch_keepers=keepers)
    out: dict[str, Any] = {}
    async with app.run_test(size=(160, 45)) as pilot:
        for t in range(since, until + 1, STEP_S):
            run.advance_to(t)
            clock.set(START + t)
            app.post_message(FilesObserved(collector.read_files()))
            await pilot.pause()
            app.refresh_state()
            if t in SPLIT_AT:
                shutil.copy(run.server_log, split / f"server.{SPLIT_AT.index(t) + 1}.log")
        out["server"] = app.query_one("#server", ServerPanel).plain
        await pilot.press("L")
        await pilot.pause()
        view = app.screen.query_one(LaunchTableView)
        out["screen"] = view.plain_rows()
        out["launches"] = app.snap.launches if app.snap else ()
    collector.close()
    return out


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("story")
    run = SimRun(base / "run", "tuning-session", start_epoch=START)
    run.prepare()
    cfg = dataclasses.replace(run.config(), url="", state_dir=base / "state")
    split = base / "split"
    split.mkdir()
    # A kdash quit during the third launch, and another started on the same log
    first = asyncio.run(_live(run, cfg, split, 0, RESTART_AT))
    out = asyncio.run(_live(run, cfg, split, RESTART_AT + STEP_S, END_S))
    shutil.copy(run.server_log, split / "server.4.log")
    out.update(cfg=cfg, base=base, split=split, log=run.server_log, first=first)
    return out


def _row(rows: list[str], label: str) -> list[str]:
    line = next(r for r in rows if r.strip().startswith(label))
    return line.strip()[len(label):].split()


def test_a_kdash_restarted_mid_session_shows_the_launches_it_saw_before(story):
    before, after = story["first"]["launches"], story["launches"]
    assert [x.outcome for x in before] == ["shutdown", "oom", "running"]
    assert [x.earlier for x in after] == [True, True, False, False]  # #3 read again
    assert [x.key for x in after[:3]] == [x.key for x in before]


def test_the_live_dashboard_shows_four_launches_across_the_rewrites(story):
    launches = story["launches"]
    assert [x.outcome for x in launches] == ["shutdown", "oom", "shutdown", "running"]
    for x, (tokens, graph) in zip(launches, CAPACITY, strict=True):
        assert x.capacity["max_total_num_tokens"] == tokens
        assert x.capacity["graph_avail_gb"] == graph
    assert [x.args["mem_fraction_static"] for x in launches] == [0.85, 0.93, 0.88, 0.9]
    assert launches[2].capacity["hicache_host_gb"] == 48.0
    assert launches[1].reason == "cuda_oom" and 240 <= launches[1].duration_s <= 260
    assert 830 <= launches[0].figures.steady <= 870
    assert launches[1].figures.steady is None
    assert 594 <= launches[2].figures.steady <= 625
    assert 1020 <= launches[3].figures.steady <= 1080


def test_the_launches_view_marks_what_changed_and_says_what_it_did(story):
    rows = story["screen"]
    assert _row(rows, "mem fraction") == ["0.85", "*0.93", "*0.88", "*0.90"]
    assert _row(rows, "kv dtype") == ["bf16", "bf16", "bf16", "*fp8_e4m3"]
    assert _row(rows, "hicache") == ["off", "off", "*48", "GB", "48", "GB"]
    assert _row(rows, "outcome") == ["shutdown", "OOM", "4m10s", "in", "shutdown", "running"]
    assert _row(rows, "KV tokens") == ["116,171", "212,000", "159,277", "376,029"]
    assert _row(rows, "mem after graphs") == ["8.34", "GB", "0.82", "GB", "5.47", "GB", "3.52",
                                              "GB"]
    text = " ".join(r.strip() for r in rows)
    assert ("left 0.82 GB after CUDA graph capture (was 8.34) and died of OOM 4 min in under "
            "prefills of up to 32K tokens") in text
    assert "2.36x KV tokens (159K -> 376K)" in text and "steady throughput +7" in text


def test_the_server_panel_compares_the_current_launch_with_the_one_before(story):
    text = " ".join(story["server"].split())
    assert ("launch 4 of 4; previous: mem 0.88 -> 0.90, kv bf16 -> fp8_e4m3 KV tokens 159K -> "
            "376K; steady 6") in text


def test_a_later_kdash_shows_the_earlier_launches_from_the_state_directory(story):
    out = io.StringIO()
    run_once(story["cfg"], as_json=True, out=out)
    docs = json.loads(out.getvalue())["launches"]
    assert [d["outcome"] for d in docs] == ["shutdown", "oom", "shutdown", "running"]
    assert [d["earlier"] for d in docs] == [True, True, True, False]
    assert [d["capacity"]["max_total_num_tokens"] for d in docs] == [t for t, _ in CAPACITY]
    assert docs[1]["outcome_text"] == "OOM 4m10s in"
    assert docs[3]["changed"] == {"mem": ["0.88", "0.90"], "kv": ["bf16", "fp8_e4m3"]}
    assert {"figures", "args", "capacity", "duration_s", "advice", "start_ts"} <= docs[0].keys()
    assert docs[3]["figures"]["steady"] is not None and docs[0]["figures"]["running"] is not None


def test_another_log_path_inherits_no_launches(story):
    other = story["base"] / "elsewhere" / "server.log"
    other.parent.mkdir()
    shutil.copy(story["log"], other)
    out = io.StringIO()
    run_once(dataclasses.replace(story["cfg"], log=other), as_json=True, out=out)
    docs = json.loads(out.getvalue())["launches"]
    assert len(docs) == 1 and docs[0]["capacity"]["max_total_num_tokens"] == 376_029


def test_kdash_launches_on_split_and_appended_logs_gives_the_same_table(story):
    split = sorted(story["split"].glob("server.*.log"))
    appended = story["base"] / "appended.log"
    appended.write_bytes(b"".join(p.read_bytes() for p in split))
    apart, together = launches_of(split), launches_of([appended])
    assert len(apart) == len(together) == 4
    rows = [r for r in table(apart) if r.label != "log"]
    assert rows == table(together)
    assert advice(apart) == advice(together)
    assert [x.outcome for x in together] == ["shutdown", "oom", "shutdown", "log_ended"]
    for x, (tokens, graph) in zip(together, CAPACITY, strict=True):
        assert (x.capacity["max_total_num_tokens"], x.capacity["graph_avail_gb"]) == (tokens, graph)
    live = story["launches"]
    assert [x.figures.steady for x in together[:3]] == [x.figures.steady for x in live[:3]]


def test_kdash_launches_prints_the_table_and_json(story, capsys):
    from dash.commands.cli import main

    split = [str(p) for p in sorted(story["split"].glob("server.*.log"))]
    assert main(["launches", *split]) == 0
    text = capsys.readouterr().out
    assert text.startswith("4 launches in 4 logs")
    assert "*0.93" in text and "OOM 4m10s in" in text and "376,029" in text
    assert main(["launches", "--json", split[1]]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["logs"] == [split[1]] and doc["launches"][0]["outcome"] == "oom"
    assert main(["launches", str(story["base"] / "missing.log")]) == 2
    assert capsys.readouterr().err.strip().endswith("missing.log: no such file")
