"""The launches kept in the state directory, per log path: saved whole, read back, damaged files
and unwritable directories as notices; and where a read tells that the log was rewritten."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dash.core.config import Config
from dash.core.launch import Launch, LaunchFigures
from dash.sources.collector import rewrites
from dash.sources.files import FollowRead
from dash.sources.launch_store import LaunchKeeper, LaunchStore, keepers_for, state_dir


def launches(n: int = 2) -> tuple[Launch, ...]:
    return tuple(Launch(key=f"k{i}", started_at=1000.0 * i, outcome="shutdown",
                        args={"mem_fraction_static": 0.85 + i / 100},
                        capacity={"max_total_num_tokens": 1000 * (i + 1)},
                        figures=LaunchFigures(steady=500.0 + i, decode_lines=10))
                 for i in range(n))


def test_saved_launches_come_back_remembered(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.touch()
    store = LaunchStore(tmp_path / "state", log)
    assert store.load() == ((), None)  # nothing kept yet: no notice
    assert store.save(launches(), 5.0) is None
    back, notice = LaunchStore(tmp_path / "state", log).load()
    assert notice is None and [x.key for x in back] == ["k0", "k1"]
    assert all(x.earlier for x in back) and back[1].figures.steady == 501.0
    assert back[1].capacity["max_total_num_tokens"] == 2000
    assert not list(store.path.parent.glob(".*.tmp"))  # written whole, renamed over


def test_a_log_is_known_by_its_real_path_and_another_path_inherits_nothing(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.touch()
    link = tmp_path / "link.log"
    link.symlink_to(log)
    LaunchStore(tmp_path, log).save(launches(), 1.0)
    assert len(LaunchStore(tmp_path, link).load()[0]) == 2
    other = tmp_path / "other.log"
    other.touch()
    assert LaunchStore(tmp_path, other).load() == ((), None)


@pytest.mark.parametrize(("text", "says"), [
    ("{not json", "not JSON"),
    (json.dumps({"log": "/somewhere/else.log", "launches": []}), "not this log's"),
])
def test_a_damaged_or_foreign_file_is_a_notice(tmp_path: Path, text: str, says: str) -> None:
    store = LaunchStore(tmp_path, tmp_path / "server.log")
    store.path.parent.mkdir(parents=True)
    store.path.write_text(text)
    found, notice = store.load()
    assert found == () and notice is not None and says in notice


def test_entries_that_are_not_launches_are_skipped(tmp_path: Path) -> None:
    store = LaunchStore(tmp_path, tmp_path / "server.log")
    store.save(launches(1), 1.0)
    doc = json.loads(store.path.read_text())
    doc["launches"] = [42, {"no": "key"}, *doc["launches"]]
    store.path.write_text(json.dumps(doc))
    assert [x.key for x in store.load()[0]] == ["k0"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes everywhere")
def test_an_unwritable_state_directory_is_an_error_text(tmp_path: Path) -> None:
    base = tmp_path / "ro"
    base.mkdir()
    base.chmod(0o500)
    try:
        error = LaunchStore(base, tmp_path / "server.log").save(launches(), 1.0)
    finally:
        base.chmod(0o700)
    assert error is not None and "launches are not being kept" in error


def test_a_state_directory_that_is_a_file_is_an_error_text(tmp_path: Path) -> None:
    base = tmp_path / "state"
    base.write_text("")
    error = LaunchStore(base, tmp_path / "server.log").save(launches(), 1.0)
    assert error is not None and "launches are not being kept" in error


def test_the_state_directory_is_the_configured_one_else_the_users(tmp_path: Path,
                                                                   monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir(Config()) == tmp_path / "xdg" / "kdash"
    assert state_dir(Config(state_dir=tmp_path / "mine")) == tmp_path / "mine"
    assert keepers_for(Config()) == ()  # no log, nothing to keep
    glob = keepers_for(Config(log=tmp_path / "a.log", more_logs=(tmp_path / "n*/server.log",)))
    assert [k.path for k in glob] == [str(tmp_path / "a.log")]  # a glob's logs come and go


def test_the_keeper_saves_starts_and_ends_at_once_and_figures_now_and_then(tmp_path: Path) -> None:
    keeper = LaunchKeeper(LaunchStore(tmp_path, tmp_path / "log"), every_s=30.0)
    assert keeper.due(1, 1, 0.0)
    keeper.taken(1, 1, 0.0)
    assert not keeper.due(1, 1, 100.0)  # nothing new
    assert not keeper.due(2, 1, 10.0)  # new figures, too soon
    assert keeper.due(2, 1, 31.0)
    assert keeper.due(3, 2, 1.0)  # a launch started or ended


def test_a_read_tells_where_the_log_was_rewritten() -> None:
    lines = ("a", "b", "c")
    assert rewrites(FollowRead("p", lines, events=("opened",), starts=((0, 4096),))) == ()
    assert rewrites(FollowRead("p", lines, events=("truncated",), starts=((2, 0),))) == (2,)
    rotated = FollowRead("p", lines, events=("rotated", "opened"), starts=((1, 0),))
    assert rewrites(rotated) == (1,)
    assert rewrites(FollowRead("p", lines, events=("deleted",))) == (3,)


def test_overlapping_saves_are_written_one_at_a_time_the_newest_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each save runs in a thread of its own, and the first (at the first tick) can still be
    writing when the log's read asks for the next: the two shared one temporary name, and the
    first's rename found it gone (`launch history ...: No such file or directory; launches are
    not being kept` on a fresh start). They are written one at a time, and a save of older
    launches that comes after a newer one writes nothing."""
    import threading

    import dash.sources.launch_store as store_mod

    log = tmp_path / "server.log"
    log.touch()
    store = LaunchStore(tmp_path / "state", log)
    held, go = threading.Event(), threading.Event()
    real_replace = os.replace

    def slow_replace(src: str, dst: str) -> None:
        if not held.is_set():  # the first save stops before its rename
            held.set()
            go.wait(5)
        real_replace(src, dst)

    monkeypatch.setattr(store_mod.os, "replace", slow_replace)
    errors: list[str | None] = []
    first = threading.Thread(target=lambda: errors.append(store.save(launches(1), 1.0, 1)))
    first.start()
    assert held.wait(5)
    second = threading.Thread(target=lambda: errors.append(store.save(launches(2), 2.0, 2)))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # waits for the first to finish
    go.set()
    first.join(5)
    second.join(5)
    assert errors == [None, None]
    back, _ = LaunchStore(tmp_path / "state", log).load()
    assert [x.key for x in back] == ["k0", "k1"]
    assert store.save(launches(1), 3.0, 1) is None  # older than what is written: skipped
    assert len(LaunchStore(tmp_path / "state", log).load()[0]) == 2
