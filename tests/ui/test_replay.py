"""`kdash replay` through Textual's Pilot: real log files read by the worker, keys, alerts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dash.commands.cli import main
from dash.commands.replay import replay_config
from dash.core.config import Config
from dash.ui.replay_app import ReplayApp, ReplayHelpScreen
from dash.ui.widgets.log_pane import LogPane
from ui.fake_run import screen_text

SIZE = (160, 45)
T0 = 1_750_000_000.0
"""The simulated run's first second (its log prints local time)."""
OOM_AT = 300.0
"""The oom-crash-restart scenario's OOM, in seconds from the start."""


class Pacer:
    """The real clock the replay paces itself by, moved only by the test."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from dash.sim import SimRun

    root = tmp_path_factory.mktemp("oom")
    SimRun(root, "oom-crash-restart", start_epoch=T0).advance_to(420)
    return root / "server.log"


def make(log: Path, speed: float = 30.0, outputs: tuple[str, ...] = ()) -> tuple[ReplayApp, Pacer]:
    pacer = Pacer()
    cfg = replay_config(log, outputs, base=Config())
    return ReplayApp(cfg, speed=speed, pacer=pacer, cpu_meter=lambda: 0.4), pacer


async def loaded(app: ReplayApp, pilot: object) -> None:
    for _ in range(400):
        if app.frame is not None:
            await app.settled()
            return
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    raise AssertionError(f"the log was never loaded: {app.status()}")


async def tick(app: ReplayApp, pacer: Pacer, real_s: float) -> None:
    """Let `real_s` seconds pass and wait for the replay thread's frame."""
    pacer.t += real_s
    app.refresh_state()
    await app.settled()


async def press(app: ReplayApp, pilot: object, *keys: str) -> None:
    await pilot.press(*keys)  # type: ignore[attr-defined]
    await app.settled()


def line_count(path: Path) -> int:
    return len(path.read_text().splitlines())


def alert_ids(app: ReplayApp) -> set[str]:
    assert app.snap is not None
    return {a.id for a in app.snap.alerts}


async def test_the_log_clock_runs_at_speed_and_space_stops_it(sim_log: Path) -> None:
    app, pacer = make(sim_log, speed=30.0)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.clock.now() == T0
        await tick(app, pacer, 2.0)
        assert app.clock.now() == T0 + 60.0
        await press(app, pilot, "space")
        assert app.replay_paused
        await tick(app, pacer, 5.0)
        assert app.clock.now() == T0 + 60.0
        assert "paused" in screen_text(app)
        await press(app, pilot, "space")
        await tick(app, pacer, 1.0)
        assert app.clock.now() == T0 + 90.0
        assert app.snap is not None and app.snap.now == T0 + 90.0


async def test_right_and_left_move_a_minute_and_alerts_follow_the_log_clock(sim_log: Path) -> None:
    app, pacer = make(sim_log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(app, pilot, "space")  # the clock moves only by the keys
        for _ in range(4):
            await press(app, pilot, "right")
        assert app.clock.now() == T0 + 240.0
        assert "server_oom" not in alert_ids(app)
        await press(app, pilot, "right")
        assert app.clock.now() == T0 + 300.0
        assert app.snap is not None
        oom = next(a for a in app.snap.alerts if a.id == "server_oom")
        assert oom.severity == "crit" and oom.since == T0 + OOM_AT  # when it happened in the log
        text = screen_text(app)
        assert oom.message[:40] in text
        assert time.strftime("%H:%M:%S", time.localtime(T0 + 300.0)) in text
        await press(app, pilot, "right")  # the restart at 360 ends the OOM; its line keeps the cause
        assert app.clock.now() == T0 + 360.0
        assert "server_oom" not in alert_ids(app)
        assert app.snap is not None
        restarted = next(a for a in app.snap.alerts if a.id == "server_restarted")
        assert restarted.severity == "warn" and "OOM" in restarted.message
        assert app.run_ is not None
        before = app.run_.state
        await press(app, pilot, "left", "left")  # back before the OOM: the state is rebuilt
        assert app.run_.state is not before
        assert app.clock.now() == T0 + 240.0
        assert "server_oom" not in alert_ids(app)
        assert "gpu_headroom_low" in alert_ids(app)  # from startup, as it was at this time


async def test_the_replay_stops_at_the_end_of_the_log(sim_log: Path) -> None:
    app, pacer = make(sim_log, speed=300.0)
    log_lines = line_count(sim_log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await tick(app, pacer, 1.0)
        assert app.cursor is not None and not app.cursor.at_end
        await tick(app, pacer, 1.0)
        assert app.cursor.at_end
        end = app.clock.now()
        await tick(app, pacer, 10.0)
        assert app.clock.now() == end
        text = screen_text(app)
        assert "END OF LOG" in text and "100%" in text and "PAUSED" not in text
        await press(app, pilot, "space")  # at the end too, space says what it did
        assert "END OF LOG, PAUSED" in screen_text(app)
        await press(app, pilot, "space")
        assert "PAUSED" not in screen_text(app)
        assert "server_restarted" in alert_ids(app)
        assert "replay of a log, no live GPUs" in text
        # replay has no --no-http flag to name; and the lines are the log's, not its stats'
        assert "http not replayed" in text and "--no-http" not in text
        srv = app.snap.server
        assert srv.lines == log_lines > srv.records
        assert f"{srv.lines:,} lines, {srv.records:,} records" in text


async def test_normal_keys_still_work_and_the_filter_box_keeps_its_spaces(sim_log: Path) -> None:
    app, pacer = make(sim_log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(app, pilot, "question_mark")
        assert isinstance(app.screen, ReplayHelpScreen)
        help_text = screen_text(app)
        assert "one minute back / forward" in help_text and "acknowledge" in help_text
        # ← → jump in a replay: the dashboard's meaning of them (scroll the log pane) is not
        # listed beside it
        assert help_text.count("← →") == 1 and "long lines left / right" not in help_text
        await press(app, pilot, "space")  # closes the help; does not pause
        assert not isinstance(app.screen, ReplayHelpScreen) and not app.replay_paused
        await press(app, pilot, "right", "right", "right", "right", "right", "right")
        await press(app, pilot, "l")
        pane = app.query_one("#log", LogPane)
        assert pane.display and any("out of memory" in line for line in pane.lines["server"])
        await press(app, pilot, "slash", "o", "u", "t", "space", "o", "f")
        assert pane.filter == "out of" and not app.replay_paused
        await press(app, pilot, "enter", "q")
    assert app.return_code == 0


async def test_a_real_vllm_oom_replays_with_its_month_day_stamps(real_logs: Path) -> None:
    app, pacer = make(real_logs / "vllm-9290-oom-engine-error-traceback.log")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.timeline is not None and app.timeline.timed
        assert time.strftime("%m-%d %H:%M:%S", time.localtime(app.clock.now())) == "10-11 12:27:29"
        await tick(app, pacer, 1.0)
        assert app.snap is not None
        oom = next(a for a in app.snap.alerts if a.id == "server_oom")
        assert oom.since == app.timeline.times[0]
        assert "END OF LOG" in screen_text(app)


async def test_a_log_without_timestamps_replays_in_line_order_and_says_so(real_logs: Path) -> None:
    app, pacer = make(real_logs / "sglang-4547-cuda-error-oom-overlap-thread-traceback.log",
                      speed=1.0)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.timeline is not None and not app.timeline.timed
        assert "nominal 1 record/s" in screen_text(app)
        assert app.status()[0].startswith("replay +00:00:00")
        for _ in range(len(app.timeline.records) + 1):
            await tick(app, pacer, 1.0)
        assert app.cursor is not None and app.cursor.at_end
        assert "server_oom" in alert_ids(app)
        assert "CUDA out of memory in the server" in screen_text(app)


async def test_outputs_show_their_final_counts(sim_log: Path) -> None:
    outputs = (str(sim_log.parent / "outputs" / "*.jsonl"),)
    app, pacer = make(sim_log, outputs=outputs)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.snap is not None
        counts = {p.name: p.done for p in app.snap.partitions}
        for path in (sim_log.parent / "outputs").glob("*.jsonl"):
            assert counts[path.stem] == path.read_bytes().count(b"\n")
        await press(app, pilot, "space", "right", "left")  # a rebuild keeps them
        assert {p.name: p.done for p in app.snap.partitions} == counts


def test_a_missing_log_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "nope.log")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


@pytest.mark.parametrize("speed", ["0", "inf", "nan"])
def test_a_bad_speed_is_one_line_and_exit_2(sim_log: Path, capsys: pytest.CaptureFixture[str],
                                            speed: str) -> None:
    from dash.commands.cli import main

    assert main(["replay", str(sim_log), "--speed", speed]) == 2
    err = capsys.readouterr().err
    assert "--speed" in err and err.startswith("kdash: ") and err.count("\n") == 1


@pytest.mark.parametrize("back", [1, 3])
async def test_a_jump_back_from_a_saved_state_matches_replaying_from_the_start(
        sim_log: Path, back: int) -> None:
    app, _ = make(sim_log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(app, pilot, "space", *["right"] * 7)
        assert app.checkpoints is not None and len(app.checkpoints.items) >= 2
        await press(app, pilot, *["left"] * back)
        assert app.snap is not None
        snap = app.snap
    straight, _ = make(sim_log)
    async with straight.run_test(size=SIZE) as pilot:
        await loaded(straight, pilot)
        await press(straight, pilot, "space", *["right"] * (7 - back))
        assert straight.snap is not None
        assert straight.snap.now == snap.now == T0 + 60.0 * (7 - back)
        assert [(a.id, a.since) for a in straight.snap.alerts] == [(a.id, a.since) for a in snap.alerts]
        assert straight.snap.server.peak == snap.server.peak
        assert straight.snap.server.records == snap.server.records


@pytest.mark.parametrize("content", [b"", b"\x00\xff garbage\nno records here\n" * 50])
async def test_a_log_without_records_says_so_and_keys_do_nothing_harmful(
        tmp_path: Path, content: bytes) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(content)
    app, pacer = make(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(app, pilot, "right", "left", "space", "space")
        await tick(app, pacer, 3.0)
        assert "this log has no server records" in screen_text(app)
        await press(app, pilot, "q")
    assert app.return_code == 0


async def test_a_real_time_only_log_replays_on_its_own_clock(real_logs: Path) -> None:
    app, pacer = make(real_logs / "sglang-1270-decode-time-only-timestamp.log", speed=600.0)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.timeline is not None and app.timeline.timed and app.cursor is not None
        first = app.timeline.records[0]["ts"]
        assert time.strftime("%H:%M:%S", time.localtime(app.clock.now())) == first
        while not app.cursor.at_end:
            await tick(app, pacer, 1.0)
        assert app.snap is not None and app.snap.server.last_decode is not None
        assert app.snap.server.last_decode["line"] == app.timeline.records[-1]["line"]


def two_processes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A small log read by two processes in pieces of 4 KB; the start method of each pool
    (the list returned) as it is chosen."""
    from dash.sources import logread

    monkeypatch.setenv("KDASH_PROCESSES", "2")
    monkeypatch.delenv("KDASH_START", raising=False)
    monkeypatch.setattr(logread, "PARALLEL_MIN", 0)
    monkeypatch.setattr(logread, "PIECE", 4096)
    methods: list[str] = []
    context = logread._context
    monkeypatch.setattr(logread, "_context", lambda: methods.append(context()._name) or context())
    return methods


async def test_a_log_read_by_several_processes_inside_the_app(
        sim_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app reads on a thread, so its reading processes are spawned (not forked); the
    resource tracker spawn needs was started before the app (`prepare_processes`, as an app
    that starts its own reading needs), when standard error was still a real one."""
    from dash.sources import logread

    methods = two_processes(monkeypatch)
    logread.prepare_processes(sim_log)
    app, _ = make(sim_log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.timeline is not None
        assert list(app.timeline.records) == list(logread.Scan(sim_log))
    assert methods == ["spawn"]


async def test_kdash_replay_starts_its_reading_processes_before_the_app(
        sim_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`replay_app` (what `kdash replay` runs) starts the reading processes before the app
    has a thread (forked where the platform has fork), and the app reads their pieces: the
    records are the ones one process reads."""
    from dash.commands.replay import replay_app
    from dash.sources import logread

    methods = two_processes(monkeypatch)
    app = replay_app(sim_log, (), 30.0, cpu_meter=lambda: 0.4)
    assert len(methods) == 1  # started already, before the app runs
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.timeline is not None
        assert list(app.timeline.records) == list(logread.Scan(sim_log))
    assert len(methods) == 1  # the app's thread started none of its own


def pieces_of(path: Path) -> int:
    from dash.sources import logread

    return len(logread.cuts(path, path.stat().st_size)) - 1


async def test_an_app_that_quits_while_reading_stops_reading(
        sim_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Quitting while a long log is read does not wait for the rest of it to be read."""
    from dash.sources import logread, replay_read

    monkeypatch.setenv("KDASH_PROCESSES", "1")
    monkeypatch.setattr(logread, "PIECE", 4096)
    total = pieces_of(sim_log)
    assert total > 20
    read: list[int] = []
    piece = replay_read.SeriesJob.piece
    app, _ = make(sim_log)

    def slow(job: replay_read.SeriesJob, scan: logread.Scan) -> object:
        read.append(1)
        if len(read) == 1:
            app.call_from_thread(app.exit)
        time.sleep(0.05)  # a slow disk: the log is read for longer than the app takes to quit
        return piece(job, scan)

    monkeypatch.setattr(replay_read.SeriesJob, "piece", slow)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.05)
    assert app.frame is None and app.load_error is None
    assert len(read) < total


async def test_a_failing_load_is_one_line_and_exit_2(
        sim_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading processes that cannot start end the replay with a one-line error."""
    from dash.sources import logread

    def refuse(*args: object, **kwargs: object) -> None:
        raise ValueError("bad value(s) in fds_to_keep")

    monkeypatch.setenv("KDASH_PROCESSES", "2")
    monkeypatch.setattr(logread, "PARALLEL_MIN", 0)
    monkeypatch.setattr(logread, "ProcessPoolExecutor", refuse)
    app, _ = make(sim_log)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            if app.load_error is not None:
                break
            await pilot.pause(0.05)
    assert app.return_code == 2
    assert app.load_error is not None and "\n" not in app.load_error
    assert "could not start the processes that read it" in app.load_error


def cut_gz(log: Path, to: Path) -> Path:
    """The log compressed, its second half lost (a copy interrupted)."""
    import gzip

    whole = gzip.compress(log.read_bytes())
    to.write_bytes(whole[: len(whole) // 2])
    return to


async def test_a_cut_gz_replays_the_lines_before_the_break_and_says_so(
        sim_log: Path, tmp_path: Path) -> None:
    app, pacer = make(cut_gz(sim_log, tmp_path / "server.log.gz"))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.load_error is None and app.timeline is not None
        read = app.timeline.lines
        assert read is not None and 0 < read < line_count(sim_log)
        assert f"breaks off after line {read:,}" in (app.timeline.broke_off or "")
        assert f"the log breaks off after line {read:,}" in app.status()[1]
        assert any("breaks off" in str(n.message) for n in app._notifications)
        await tick(app, pacer, 60.0)
        assert app.frame is not None and app.frame.now > app.timeline.times[0]
