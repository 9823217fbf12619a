"""The server's state as a user sees it in a real terminal (tmux), at 160x45 and 80x24: a live
log with nothing on the default port, the URL found in the log, and a demo that keeps its
alert history to itself."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from test_tmux import Tmux

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

DECODE = ("[{ts} TP0] Decode batch. #running-req: 42, #token: 81234, token usage: 0.41, "
          "cuda graph: True, gen throughput (token/s): 983.12, #queue-req: 3, \n")


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture
def live_log(tmp_path: Path) -> Iterator[Path]:
    """A server log that a working server writes to: a decode line a second, stamped now."""
    log = tmp_path / "server.log"
    log.write_text("")
    stop = threading.Event()

    def server() -> None:
        while not stop.is_set():
            with log.open("a") as fh:
                fh.write(DECODE.format(ts=datetime.now().strftime("%Y-%m-%d %H:%M:%S")))
            stop.wait(1.0)

    writer = threading.Thread(target=server, daemon=True)
    writer.start()
    yield log
    stop.set()
    writer.join()


@pytest.mark.parametrize("size", [(160, 45), (80, 24)], ids=["160x45", "80x24"])
def test_a_live_log_with_nothing_on_the_default_port_is_a_url_warning_not_a_crit(
        tmp_path: Path, live_log: Path, size: tuple[int, int]) -> None:
    if not _port_free(30000):
        pytest.skip("something listens on 127.0.0.1:30000 here")
    tmux = Tmux(tmp_path, f"--log {live_log} --no-bell", size=size,
                env={"XDG_STATE_HOME": str(tmp_path / "state")})
    try:
        screen = tmux.wait_for(lambda s: "no answer at http://127.0.0.1:30000" in s, timeout=40)
        assert "server running (log live)" in screen
        assert "CRIT" not in screen and "server down" not in screen
        assert "WARN" in screen
        if size[0] >= 160:
            assert "no answer at 127.0.0.1:30000" in screen.splitlines()[0]  # the header
            assert "--no-http" in screen  # the alert's fix
        time.sleep(4)  # and it stays so
        assert "CRIT" not in tmux.screen()
    finally:
        tmux.close()


def test_the_url_comes_from_the_logs_server_args(tmp_path: Path) -> None:
    from dash.sim import SimRun

    run = SimRun(tmp_path / "sim", "healthy", speed=10.0)
    run.start()
    try:
        port = run.url.rsplit(":", 1)[1]
        tmux = Tmux(tmp_path, f"--log {run.server_log} --no-bell",
                    env={"XDG_STATE_HOME": str(tmp_path / "state")})
        try:
            screen = tmux.wait_for(lambda s: "● server up" in s, timeout=40)
            assert f"http://127.0.0.1:{port}" in screen
            assert f"from the log's server_args, port {port}" in screen
        finally:
            tmux.close()
    finally:
        run.stop()


def test_the_demo_leaves_the_users_state_directory_untouched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    state = tmp_path / "xdg-state"
    home.mkdir()
    tmux = Tmux(tmp_path, f"demo --scenario oom-crash-restart --speed 60 --dir {tmp_path / 'run'}",
                env={"HOME": str(home), "XDG_STATE_HOME": str(state)})
    try:
        tmux.wait_for(lambda s: "CUDA out of memory" in s or "OOM (mem fraction" in s, timeout=60)
        tmux.keys("q")
        assert tmux.exit_status() == 0
    finally:
        tmux.close()
    assert not state.exists() and list(home.iterdir()) == []  # nothing of the demo's
    history = tmp_path / "run" / "kdash-state" / "alerts.jsonl"
    assert "server_oom" in history.read_text()  # it went to the demo's own directory
