"""Client processes via psutil, against real subprocesses."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

from dash.sources.procs import ProcessSource


def test_matches_real_processes_counts_duplicates_and_excludes_itself() -> None:
    tag = f"kdash_test_client_{uuid.uuid4().hex[:8]}"
    code = f"import time; time.sleep(30)  # {tag}"
    src = ProcessSource(tag)
    assert src.sample() == ()
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    try:
        time.sleep(0.3)
        found = src.sample()
        assert isinstance(found, tuple)
        assert sorted(p.pid for p in found) == sorted(p.pid for p in procs)
        assert all(p.started_at and tag in p.cmdline for p in found)
        assert all(p.cpu_percent is None for p in found)  # no baseline yet
        again = src.sample()
        assert isinstance(again, tuple) and all(p.cpu_percent is not None for p in again)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert src.sample() == ()


def test_own_command_line_is_not_a_match() -> None:
    # This test process's own argv holds "pytest"; kdash matching "pytest" must not find itself.
    found = ProcessSource("pytest").sample()
    assert isinstance(found, tuple)
    import os
    assert os.getpid() not in {p.pid for p in found}


def test_a_pattern_that_is_not_a_regex_is_literal() -> None:
    assert ProcessSource("run[inference").sample() == ()


def test_other_kdash_processes_with_the_same_pattern_are_not_clients(tmp_path) -> None:
    # A dashboard and a `kdash serve` (or a cron `--once`) with the same --process see each other
    # through their command lines; neither is the client, nor the shell that started it.
    tag = f"kdash_test_client_{uuid.uuid4().hex[:8]}"
    sleeper = tmp_path / "kdash"
    sleeper.write_text("import time; time.sleep(30)\n")
    others = [
        [sys.executable, str(sleeper), "serve", "--process", tag],
        [sys.executable, "-c", "import time; time.sleep(30)", "-m", "dash", f"--process={tag}"],
        ["bash", "-c", f"{sleeper} --process {tag}; sleep 30"],
    ]
    client = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(30)  # {tag}"])
    procs = [subprocess.Popen(argv) for argv in others]
    try:
        time.sleep(0.3)
        found = ProcessSource(tag).sample()
        assert isinstance(found, tuple)
        assert [p.pid for p in found] == [client.pid]
    finally:
        for p in (client, *procs):
            p.kill()
            p.wait()


def test_is_kdash_reads_command_lines() -> None:
    from dash.sources.procs import is_kdash

    assert is_kdash(["/venv/bin/kdash", "--process", "run_inference"])
    assert is_kdash(["python3", "-m", "dash", "serve", "--process=run_inference"])
    assert is_kdash(["tmux", "new", "-d", "kdash --log s.log --process run_inference"])
    assert not is_kdash(["python", "run_inference.py", "--out", "/data/kdash"])
    assert not is_kdash(["python", "run_inference.py", "--process", "4"])
