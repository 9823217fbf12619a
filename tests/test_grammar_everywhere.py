"""A field and an event phrase added in the grammar alone are read by every command: `export`,
`summary`, the live dashboard (the real Collector and RunState) and `replay`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from live_read import live_server

from dash.commands.summary import summarize
from dash.core.log.convert import INT
from dash.core.log.grammar import GRAMMAR
from dash.core.log.syntax import Field, Grammar, Phrase
from dash.sources import replay_read

FOO = GRAMMAR.with_field("decode", Field("#foo-req", "foo_req", INT)).with_phrase(
    Phrase("foo_trip", any=("Foo reactor tripped",), fields={"reactor": "foo"}), before="error")
DECODE = ("[2026-03-01 08:{m:02d}:{s:02d}] Decode batch, #running-req: 8, #token: 100, "
          "token usage: 0.10, #foo-req: {f}, gen throughput (token/s): 50.00, #queue-req: 0")
ACCESS = '[2026-03-01 08:00:00] INFO:     127.0.0.1:5 - "POST /generate HTTP/1.1" 200 OK'


def _log(tmp_path: Path, seconds: int = 600) -> Path:
    lines = []
    for i in range(seconds):
        lines.append(DECODE.format(m=i // 60, s=i % 60, f=i % 7))
        lines.append(ACCESS)
        if i == seconds // 2:
            lines.append("[2026-03-01 08:05:00] Foo reactor tripped, 3 rods")
    path = tmp_path / "server.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _last_foo(seconds: int = 600) -> int:
    return (seconds - 1) % 7


def test_export(tmp_path: Path, exported: Callable[..., list[dict[str, Any]]]) -> None:
    path = _log(tmp_path)
    rows = exported(path, FOO)
    decodes = [r for r in rows if r["kind"] == "decode"]
    assert len(decodes) == 600 and [r["foo_req"] for r in decodes[:8]] == [0, 1, 2, 3, 4, 5, 6, 0]
    assert [(r["event"], r["reactor"]) for r in rows if r["kind"] == "event"] == [("foo_trip", "foo")]
    plain = exported(path, GRAMMAR)  # not in kdash's own grammar
    assert plain and all("foo_req" not in r for r in plain)


def test_summary(tmp_path: Path) -> None:
    doc = summarize(_log(tmp_path), FOO)
    assert doc["last_decode"]["foo_req"] == _last_foo()
    assert doc["event_counts"] == {"foo_trip": 1}


def test_live_dashboard(tmp_path: Path) -> None:
    server = live_server(_log(tmp_path), FOO)
    assert server.last_decode is not None and server.last_decode["foo_req"] == _last_foo()
    assert [e["event"] for e in server.events] == ["foo_trip"]


def test_replay_timeline(tmp_path: Path) -> None:
    records = list(replay_read.load_timeline(_log(tmp_path), grammar=FOO).records)
    assert records[-1]["foo_req"] == _last_foo()
    assert [r["event"] for r in records if r["kind"] == "event"] == ["foo_trip"]


async def test_replay_app(tmp_path: Path) -> None:
    from dash.commands.replay import replay_config
    from dash.ui.replay_app import ReplayApp

    app = ReplayApp(replay_config(_log(tmp_path), ()), speed=1e6, grammar=FOO)
    async with app.run_test(size=(160, 45)) as pilot:
        while app.cursor is None or not app.cursor.at_end:
            await pilot.pause(0.05)
        await pilot.pause(0.6)
        server = app.state.snapshot(app.clock.now()).server
        assert server.last_decode is not None and server.last_decode["foo_req"] == _last_foo()
        assert "foo_trip" in [e["event"] for e in server.events]


def test_grammar_is_what_the_workers_get() -> None:
    import pickle

    assert pickle.loads(pickle.dumps(FOO)) == FOO
    assert isinstance(FOO, Grammar)
