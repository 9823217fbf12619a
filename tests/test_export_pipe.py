"""`kdash export LOG | head`: the reader going away is no error, in either format."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINE = ("[2025-03-14 02:16:{s:02d} TP0] Decode batch. #running-req: 509, #token: 180776, token "
        "usage: 0.43, gen throughput (token/s): 7897.87, largest-len: 0, #queue-req: 0, \n")


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_export_into_head_stops_quietly(tmp_path: Path, fmt: str) -> None:
    """The JSON lines are written as the pieces of the log are read; a write that fails for a
    closed pipe was taken for the log failing to read: `kdash: LOG: Broken pipe`, exit 2
    (a usage error), where csv (and `--once --json | head`) stop quietly with 0."""
    log = tmp_path / "server.log"
    log.write_text("".join(LINE.format(s=k % 60) for k in range(200_000)))  # ~30 MB
    head = subprocess.Popen(["head", "-n", "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert head.stdin is not None
    proc = subprocess.run([sys.executable, "-m", "dash", "export", str(log), "--format", fmt],
                          stdout=head.stdin, stderr=subprocess.PIPE, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO),
                               "XDG_CONFIG_HOME": str(tmp_path)})
    head.stdin.close()
    assert head.stdout is not None
    out = head.stdout.read().decode()
    head.wait(timeout=30)
    assert len(out.splitlines()) == 2
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err
