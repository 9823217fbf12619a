"""Alert delivery with real subprocesses, a real HTTP server on 127.0.0.1 and real files."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from dash.core.alerts.model import AlertChanges
from dash.core.snapshot import Alert
from dash.sources import alert_sinks
from dash.sources.alert_sinks import AlertDelivery, append_history, run_command

ALERT = Alert(id="server_oom", severity="crit", since=1_750_000_000.0,
              message="CUDA out of memory in the server", evidence="OOM at 12:00:06 (line 812)",
              hint="Lower --mem-fraction-static", line="torch.OutOfMemoryError: CUDA out of memory")


def test_command_gets_the_alert_as_json_on_stdin_without_a_shell(tmp_path: Path) -> None:
    out = tmp_path / "got; touch pwned.json"
    script = tmp_path / "hook.py"
    script.write_text("import sys, pathlib\npathlib.Path(sys.argv[1]).write_text(sys.stdin.read())\n")
    cmd = f"{sys.executable} {script} '{out}'"
    assert run_command(cmd, ALERT) is None
    doc = json.loads(out.read_text())
    assert doc["id"] == "server_oom" and doc["severity"] == "crit" and doc["event"] == "fired"
    assert {"since", "message", "evidence", "hint", "line"} <= set(doc)
    assert not (tmp_path / "pwned.json").exists()  # `;` was an argument, not a shell operator


def test_command_failures_are_values(tmp_path: Path) -> None:
    assert "exited 3" in (run_command(f"{sys.executable} -c 'import sys; sys.exit(3)'", ALERT) or "")
    assert "no-such-kdash-hook" in (run_command("no-such-kdash-hook --x", ALERT) or "")
    assert "timed out" in (run_command(f"{sys.executable} -c 'import time; time.sleep(5)'",
                                       ALERT, timeout=0.3) or "")
    assert run_command("   ", ALERT) == "on-alert command is empty"
    assert "quotation" in (run_command("echo 'unclosed", ALERT) or "")


def test_history_is_jsonl_in_the_state_dir_and_rolls_over(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(alert_sinks, "user_state_dir", lambda: tmp_path / "state")
    path = alert_sinks.history_path()
    assert path.parent == tmp_path / "state"
    assert append_history([(ALERT, "fired"), (ALERT, "cleared")], 1.0) is None
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["event"] for r in rows] == ["fired", "cleared"] and rows[0]["at"] == 1.0
    monkeypatch.setattr(alert_sinks, "HISTORY_MAX_BYTES", 10)
    append_history([(ALERT, "fired")], 2.0)
    assert path.with_name("alerts.jsonl.1").exists() and len(path.read_text().splitlines()) == 1


def test_history_error_is_a_value(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert "alert history" in (append_history([(ALERT, "fired")], 1.0, blocker / "a.jsonl") or "")


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    got: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", got
    server.shutdown()
    server.server_close()


def test_delivery_sends_new_alerts_everywhere(tmp_path: Path, webhook: tuple[str, list]) -> None:
    url, got = webhook
    out = tmp_path / "hook.json"
    hook = tmp_path / "hook.py"
    hook.write_text("import sys, pathlib\npathlib.Path(sys.argv[1]).write_text(sys.stdin.read())\n")
    history = tmp_path / "state" / "alerts.jsonl"
    delivery = AlertDelivery(on_alert=f"{sys.executable} {hook} {out}", webhook=url,
                             history=history)
    errors = asyncio.run(delivery.deliver(AlertChanges(new=(ALERT,)), 5.0))
    assert errors == []
    assert got == [{"text": "kdash CRIT server_oom: CUDA out of memory in the server\n"
                            "OOM at 12:00:06 (line 812)"}]
    assert json.loads(out.read_text())["id"] == "server_oom"
    assert json.loads(history.read_text())["event"] == "fired"
    # A cleared alert is recorded but not announced.
    assert delivery.deliver_blocking(AlertChanges(cleared=(ALERT,)), 6.0) == []
    assert len(got) == 1 and len(history.read_text().splitlines()) == 2


def test_unreachable_webhook_is_an_error_value() -> None:
    delivery = AlertDelivery(webhook="http://127.0.0.1:9/hook/T0SECRET")
    errors = delivery.deliver_blocking(AlertChanges(new=(ALERT,)), 1.0)
    assert len(errors) == 1 and errors[0]
    # which delivery failed, said without the hook's path (a Slack hook's path is its secret)
    assert errors[0].startswith("webhook to 127.0.0.1:9: ") and "SECRET" not in errors[0]


def test_the_history_is_read_back_from_its_end_and_names_its_sessions(tmp_path: Path) -> None:
    from dash.core.alerts.history import entries_from_lines
    from dash.core.config import Config
    from dash.sources.alert_sinks import read_history

    path = alert_sinks.history_path(Config(state_dir=tmp_path / "demo-state"))
    assert path == tmp_path / "demo-state" / "alerts.jsonl"
    assert read_history(path) == ([], None)  # not there yet: no error
    for i in range(300):
        assert append_history([(ALERT, "fired"), (ALERT, "cleared")], float(i), path,
                              session="s1") is None
    with path.open("a") as fh:
        fh.write("not json\n")
    lines, error = read_history(path, max_bytes=20_000)
    assert error is None and 0 < len(lines) < 600  # only the end, the cut first line dropped
    assert all(doc["session"] == "s1" for doc in lines)
    entries = entries_from_lines(lines)
    assert entries[-1].fired_at == 299.0 and entries[-1].cleared_at == 299.0
    (tmp_path / "blocked").write_text("")
    assert "alert history" in (read_history(tmp_path / "blocked" / "alerts.jsonl")[1] or "")


def test_earlier_sessions_are_shown_only_to_a_session_that_watches_the_same(tmp_path: Path) -> None:
    """One history file serves every server a user watches: another log's OOM is not this
    one's history."""
    from dash.core.alerts.history import entries_from_lines
    from dash.core.config import Config
    from dash.sources.alert_sinks import read_history, watch_key

    path = tmp_path / "alerts.jsonl"
    vllm = watch_key(Config(log=tmp_path / "vllm.log"))
    sglang = watch_key(Config(log=tmp_path / "sglang.log"))
    assert vllm != sglang and str(tmp_path / "vllm.log") in vllm
    assert watch_key(Config(log=Path("a.log"), more_logs=(Path("b.log"),))) == \
        watch_key(Config(log=Path("b.log"), more_logs=(Path("a.log"),)))
    append_history([(ALERT, "fired")], 1.0, path, session="s1", watch=vllm)
    append_history([(ALERT, "fired")], 2.0, path, session="s2", watch=sglang)
    lines, _ = read_history(path)
    assert [e.fired_at for e in entries_from_lines(lines, sglang)] == [2.0]
    assert [e.fired_at for e in entries_from_lines(lines, vllm)] == [1.0]
    delivery = AlertDelivery.from_config(Config(log=tmp_path / "vllm.log",
                                                state_dir=tmp_path / "st"))
    assert delivery.watch == vllm
