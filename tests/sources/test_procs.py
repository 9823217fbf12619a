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
