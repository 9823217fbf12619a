"""Several server logs in one run: a PD prefill and decode server, two nodes, a glob that waits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from dp_logs import DpLog, dp_values, stamp, write_dp_log, write_pd_logs
from exposition_lint import lint

from dash.commands.once import collect_once
from dash.commands.once_text import render_text
from dash.core.clock import FakeClock
from dash.core.config import Config, merge_layers
from dash.core.errors import ConfigError
from dash.core.log.parse import PARSER
from dash.core.state.servers import server_names
from dash.core.views.jsondoc import snapshot_to_json
from dash.core.views.metrics_map import families
from dash.sources.collector import Collector, apply_files
from dash.sources.config_files import build_config

START = 1_780_000_000.0
REPO = Path(__file__).resolve().parent.parent


def _touch(*paths: Path) -> None:
    for p in paths:
        os.utime(p, (time.time(), time.time()))


def _pd(tmp_path: Path) -> tuple[Path, Path]:
    prefill, decode = tmp_path / "prefill.log", tmp_path / "decode.log"
    write_pd_logs(prefill, decode, START)
    _touch(prefill, decode)
    return prefill, decode


def test_server_names_are_what_tells_the_paths_apart() -> None:
    assert server_names(["/x/prefill.log", "/x/decode.log"]) == ["prefill", "decode"]
    assert server_names(["/r/node0/server.log", "/r/node1/server.log"]) == \
        ["node0/server", "node1/server"]
    assert server_names(["/a/s.log", "/a/s.txt"]) == ["/a/s.log", "/a/s.txt"]


def test_log_takes_a_list_a_repeat_or_one_path(tmp_path: Path) -> None:
    (tmp_path / "kdash.toml").write_text('log = ["prefill.log", "decode.log"]\n')
    cfg = build_config({}, cwd=tmp_path, user_file=tmp_path / "none.toml")
    assert cfg.logs == (Path("prefill.log"), Path("decode.log")) and cfg.log == Path("prefill.log")
    cfg = build_config({"log": ["a.log", "b.log", "a.log"]}, cwd=tmp_path,
                       user_file=tmp_path / "none.toml")
    assert cfg.logs == (Path("a.log"), Path("b.log"))  # flags win; a repeat is one log
    assert merge_layers([("f", {"log": "one.log"})]).logs == (Path("one.log"),)
    with pytest.raises(ConfigError, match="log must be a path, a glob or a list"):
        merge_layers([("f", {"log": ["a.log", 3]})])


def test_a_prefill_and_a_decode_server(tmp_path: Path) -> None:
    prefill, decode = _pd(tmp_path)
    cfg = Config(log=prefill, more_logs=(decode,), url="")
    snap, _ = collect_once(cfg, window=0, clock=FakeClock(START + 121.0))
    doc = snapshot_to_json(snap)
    servers = doc["servers"]
    assert [(s["name"], s["role"]) for s in servers] == [("prefill", "prefill"), ("decode", "decode")]
    assert doc["server"]["name"] == "prefill"  # the primary: the first --log
    assert servers[0]["now"]["gen_throughput"] is None  # a prefill server generates nothing
    assert servers[1]["now"]["gen_throughput"] == pytest.approx(2100.0 + 59 % 5)
    total = doc["servers_total"]
    assert total["gen_throughput"] == servers[1]["now"]["gen_throughput"]
    assert total["running_req"] == 48 and total["queue_req"] == 59 % 3
    assert servers[1]["last_decode"]["prealloc_req"] == 3
    from prometheus_client import generate_latest

    from dash.sources.prom_export import build_registry

    assert lint(generate_latest(build_registry(lambda: snap, frozenset(("server_log",))))
                .decode()) == []
    fams = {f.name: f for f in families(snap)}
    assert fams["kdash_server_gen_throughput_tokens_per_second"].samples == \
        ((("decode",), pytest.approx(2104.0)),)
    assert fams["kdash_gen_throughput_tokens_per_second"].samples[0][1] == pytest.approx(2104.0)
    text = render_text(snap)
    assert "server      prefill: log live" in text and "server      decode: log live" in text
    assert "all servers gen 2104.0 tok/s" in text


def test_prometheus_has_no_first_servers_peak_beside_the_sum(tmp_path: Path) -> None:
    """With several servers the unlabelled throughput is their sum: the first server's peak
    beside it read as a peak below the current figure. Each server's peak is labelled."""
    prefill, decode = _pd(tmp_path)
    snap, _ = collect_once(Config(log=decode, more_logs=(prefill,), url=""), window=0,
                           clock=FakeClock(START + 121.0))
    fams = {f.name: f for f in families(snap)}
    assert "kdash_peak_gen_throughput_tokens_per_second" not in fams
    [(labels, peak)] = fams["kdash_server_peak_gen_throughput_tokens_per_second"].samples
    assert labels == ("decode",) and peak == snap.servers[0].peak.gen_throughput  # type: ignore[union-attr]


def _nodes(tmp_path: Path) -> tuple[DpLog, DpLog]:
    a = dp_values(ranks=2, minutes=2, start=START, peak=800.0, plateau=800.0)
    b = dp_values(ranks=2, minutes=2, start=START, peak=500.0, plateau=500.0)
    for i, log in enumerate((a, b)):
        (tmp_path / f"node{i}").mkdir()
        write_dp_log(tmp_path / f"node{i}" / "server.log", log)
    _touch(*tmp_path.glob("node*/server.log"))
    return a, b


def test_two_servers_by_a_glob_on_the_command_line(tmp_path: Path) -> None:
    a, _ = _nodes(tmp_path)
    out = subprocess.run([sys.executable, "-m", "dash", "--once", "--json", "--window", "0",
                          "--url", "",
                          "--log", str(tmp_path / "node*" / "server.log")],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [s["name"] for s in doc["servers"]] == ["node0/server", "node1/server"]
    assert [s["now"]["gen_throughput"] for s in doc["servers"]] == \
        [pytest.approx(800.0), pytest.approx(500.0)]
    assert doc["servers_total"]["gen_throughput"] == pytest.approx(1300.0)
    assert doc["server"]["path"].endswith("node0/server.log")


def test_a_glob_that_matches_nothing_yet_waits_and_its_first_file_takes_its_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dash.core.state.run import RunState
    from dash.sources import server_logs

    monkeypatch.setattr(server_logs, "RESCAN_S", 0.0)  # glob again at every read
    monkeypatch.setattr(server_logs, "RESCAN_FACTOR", 0.0)

    pattern = str(tmp_path / "later" / "*.log")
    cfg = Config(log=Path(pattern), url="")
    state, col = RunState(cfg), Collector(cfg)
    try:
        apply_files(state, col.read_files(), START)
        snap = state.snapshot(START)
        assert snap.server.status == "waiting" and snap.server.path == pattern
        (tmp_path / "later").mkdir()
        write_pd_logs(tmp_path / "later" / "a.log", tmp_path / "later" / "b.log", START, 10)
        apply_files(state, col.read_files(), START + 20)
        snap = state.snapshot(START + 20)
        assert [s.path for s in snap.servers] == [str(tmp_path / "later" / n) for n in ("a.log", "b.log")]
        assert snap.server.status == "ok" and snap.server.records == 5
    finally:
        col.close()


def _silent_decode(tmp_path: Path) -> dict[str, Any]:
    """The decode server stopped printing ten minutes ago with requests running; the prefill
    server goes on."""
    from dash.core.state.run import RunState

    prefill, decode = _pd(tmp_path)
    cfg = Config(log=prefill, more_logs=(decode,), url="")
    state, col = RunState(cfg), Collector(cfg)
    try:
        apply_files(state, col.read_files(), START + 120)
        with prefill.open("a") as fh:  # the prefill server is still writing at +12 min
            fh.write(prefill.read_text().splitlines()[-1].replace(
                time.strftime("%H:%M:", time.localtime(START + 118)),
                time.strftime("%H:%M:", time.localtime(START + 718))) + "\n")
        apply_files(state, col.read_files(), START + 720)
        for t in range(720, 1200, 30):
            state.tick(START + t)
        return {a.key: a for a in state.snapshot(START + 1200).alerts}
    finally:
        col.close()


def test_alerts_about_one_server_name_it(tmp_path: Path) -> None:
    alerts = _silent_decode(tmp_path)
    assert "server_silent:decode" in alerts
    assert alerts["server_silent:decode"].subject == "decode"
    assert alerts["server_silent:decode"].message.startswith("decode: no decode/prefill line")
    assert not [k for k in alerts if k.endswith(":prefill")]


_STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")


def restamped(src: Path, dst: Path, last_at: float) -> None:
    """`src`'s lines with their stamps moved so that its last stamp is `last_at` (the gaps
    kept), written to `dst` with that mtime: a real log as a server writes it."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    stamps = [time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
              for line in lines if (m := _STAMP.match(line))]
    shift = last_at - stamps[-1]
    dst.write_text("".join(_STAMP.sub(lambda m: "[" + stamp(
        time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + shift), line)
        for line in lines), encoding="utf-8")
    os.utime(dst, (last_at, last_at))


def silent_node(real_logs: Path, tmp_path: Path, now: float) -> tuple[Path, Path]:
    """node1 live (real decode and prefill lines, the last 5 s before `now`; its last decode
    line: 81.97 tok/s, 1 running); node2 the 4407 decode log (5,287.55 tok/s, 182 running), silent for 10 min."""
    node1, node2 = tmp_path / "node1.log", tmp_path / "node2.log"
    restamped(real_logs / "sglang-10053-decode-cuda-graph-trailing-space.log", node1, now - 5)
    restamped(real_logs / "sglang-4407-decode-largest-len-trailing-comma.log", node2, now - 600)
    return node1, node2


def test_a_silent_server_is_left_out_of_every_total(real_logs: Path, tmp_path: Path) -> None:
    now = float(int(time.time()))
    node1, node2 = silent_node(real_logs, tmp_path, now)
    cfg = Config(log=node1, more_logs=(node2,), url="")
    snap, _ = collect_once(cfg, window=0, clock=FakeClock(now))
    doc = snapshot_to_json(snap)
    assert [s["liveness"]["log"] for s in doc["servers"]] == ["live", "quiet"]
    assert doc["servers"][1]["now"]["gen_throughput"] == pytest.approx(5287.55)  # its own row
    total = doc["servers_total"]
    assert total["gen_throughput"] == pytest.approx(81.97) and total["running_req"] == 1
    assert total["running_req"] == doc["servers"][0]["last_decode"]["running_req"]  # its row's
    assert (total["servers"], total["left_out"], total["stale"]) == (["node1"], ["node2"], False)
    fams = {f.name: f for f in families(snap)}
    assert fams["kdash_gen_throughput_tokens_per_second"].samples[0][1] == pytest.approx(81.97)
    assert fams["kdash_running_requests"].samples[0][1] == 1
    assert dict(fams["kdash_server_summed"].samples) == {("node1",): 1.0, ("node2",): 0.0}
    text = render_text(snap)
    assert "1 of 2 servers gen 82.0 tok/s, running 1, queue 0; not summed (log not live): node2" \
        in text
    assert "server      node2: log quiet (last stats line 10m00s ago)" in text
    from prometheus_client import generate_latest

    from dash.sources.prom_export import build_registry

    assert lint(generate_latest(build_registry(lambda: snap, frozenset(("server_log",))))
                .decode()) == []


def test_a_prefill_servers_row_shows_its_input_throughput_summed_over_its_ranks(
        tmp_path: Path) -> None:
    # A PD prefill server with two DP ranks prints only prefill lines: its row showed
    # `- tok/s`, as if it did nothing. Its figure is the ranks' input throughput, marked `in`,
    # and the total (generated tokens) does not count it.
    from dp_logs import PD_PREFILL
    from rich.style import Style
    from rich.text import Text

    from dash.ui.widgets.ranks import server_rows

    prefill, decode = tmp_path / "prefill.log", tmp_path / "decode.log"
    write_pd_logs(tmp_path / "unused.log", decode, START)
    prefill.write_text("".join(
        f"[{stamp(START + 2 * k)} DP{d} TP{d}] " + PD_PREFILL.format(
            n=4, new=6000, cached=2000, u=0.12, r=0, q=1, inflight=2, tps=1000.0 * (d + 1)) + "\n"
        for k in range(60) for d in range(2)))
    _touch(prefill, decode)
    snap, _ = collect_once(Config(log=prefill, more_logs=(decode,), url=""), window=0,
                           clock=FakeClock(START + 121.0))
    doc = snapshot_to_json(snap)
    assert doc["servers"][0]["now"]["input_throughput"] == pytest.approx(3000.0)
    assert doc["servers_total"]["gen_throughput"] == doc["servers"][1]["now"]["gen_throughput"]
    t = Text()
    server_rows(t, snap, 0, lambda name: Style())
    rows = t.plain.splitlines()
    assert re.search(r"prefill\s+prefill\s+3,000 tok/s in\s+run", rows[0]), rows
    assert re.search(r"decode\s+decode\s+2,1\d\d tok/s\s+run", rows[1]), rows
    assert rows[0].index("run") == rows[1].index("run") == rows[2].index("run")  # aligned
    assert "in " not in rows[2]


def test_a_log_glob_is_expanded_again_only_when_its_directory_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A settled directory is one stat a read; a log created in it joins at the next read."""
    from dash.sources import server_logs

    monkeypatch.setattr(server_logs, "RESCAN_S", 0.0)
    monkeypatch.setattr(server_logs, "RESCAN_FACTOR", 0.0)
    runs: list[str] = []
    real = server_logs.glob.glob

    def counted(pattern: str, **kw: Any) -> list[str]:
        runs.append(pattern)
        return real(pattern, **kw)

    monkeypatch.setattr(server_logs.glob, "glob", counted)
    old = 1_600_000_000 * 10**9
    write_pd_logs(tmp_path / "a.log", tmp_path / "b.log", START, 10)
    (tmp_path / "b.log").unlink()
    os.utime(tmp_path, ns=(old, old))
    logs = server_logs.ServerLogs((tmp_path / "*.log",), PARSER, 1 << 20)
    try:
        assert [r.path for r in logs.read()] == [str(tmp_path / "a.log")]
        expanded = len(runs)
        for _ in range(3):
            logs.read()
        assert len(runs) == expanded  # the directory did not change: no glob
        write_pd_logs(tmp_path / "c.log", tmp_path / "b.log", START, 10)
        os.utime(tmp_path, ns=(old + 10**9, old + 10**9))
        assert [r.path for r in logs.read()] == [str(tmp_path / n) for n in ("a.log", "b.log", "c.log")]
    finally:
        logs.close()


def test_once_text_says_whose_url_a_second_server_goes_without(real_logs: Path,
                                                               tmp_path: Path) -> None:
    # The one --url is polled for the first server; the second's line said `http off`, the
    # words of --no-http, though the URL was given.
    now = float(int(time.time()))
    node1, node2 = silent_node(real_logs, tmp_path, now)
    snap, _ = collect_once(Config(log=node1, more_logs=(node2,), url="http://127.0.0.1:9"),
                           window=0, clock=FakeClock(now))
    lines = render_text(snap).splitlines()
    second = next(line for line in lines if line.startswith("server      node2: "))
    assert "http off" not in second and "not polled: the one URL is node1's" in second, second
    off, _ = collect_once(Config(log=node1, more_logs=(node2,), url=""), window=0,
                          clock=FakeClock(now))
    assert "node2: log quiet (last stats line 10m00s ago), http off" in render_text(off)
