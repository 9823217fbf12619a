"""`kdash serve` as a real process: a run progresses in real files, Prometheus scrapes it over
HTTP on 127.0.0.1, and the values match `kdash --once --json` for the same files. Also: nothing
listens unless a metrics port is asked for."""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parent.parent


def _ts(offset: float = 0.0) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() + offset))


def _decode(running: int, tokens: int, usage: float, tput: float, queue: int) -> str:
    return (f"[{_ts()} TP0] Decode batch. #running-req: {running}, #token: {tokens}, "
            f"token usage: {usage:.2f}, gen throughput (token/s): {tput:.2f}, "
            f"#queue-req: {queue}\n")


def _append(path: Path, text: str) -> None:
    with path.open("a") as fh:
        fh.write(text)


def _outputs(path: Path, n: int) -> None:
    _append(path, "".join(json.dumps({"id": i, "text": "ok"}) + "\n" for i in range(n)))


def _env(tmp_path: Path) -> dict[str, str]:
    """Keep the user's own config and state directory out of the test."""
    env = dict(os.environ)
    env.update(XDG_CONFIG_HOME=str(tmp_path / "cfg"), XDG_STATE_HOME=str(tmp_path / "state"),
               PYTHONUNBUFFERED="1")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run just past startup: the capacity line, a few decode lines, some outputs."""
    (tmp_path / "out").mkdir()
    log = tmp_path / "server.log"
    _append(log, f"[{_ts()} TP0] max_total_num_tokens=903439, chunked_prefill_size=8192, "
                 "max_prefill_tokens=16384, max_running_requests=3529, context_len=131072, "
                 "available_gpu_mem=10.26 GB\n")
    for i in range(5):
        _append(log, _decode(8, 62531 + 320 * i, 0.12, 186.0 + i, 0))
    _outputs(tmp_path / "out" / "B1.jsonl", 3)
    return tmp_path


def _source_args(d: Path) -> list[str]:
    return ["--log", str(d / "server.log"), "--outputs", str(d / "out" / "*.jsonl"),
            "--expect", "B1=10", "--expect", "B2=50", "--url", "", "--refresh", "0.2"]


@pytest.fixture
def serve(run_dir: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "dash", "serve", "--metrics-port", "0", *_source_args(run_dir)],
        cwd=run_dir, env=_env(run_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)
    try:
        url = _read_url(proc)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def _read_url(proc: subprocess.Popen[str], timeout: float = 20.0) -> str:
    """The URL `kdash serve` prints on stderr when it starts listening."""
    assert proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sel.select(timeout=0.5):
            line = proc.stderr.readline()
            if "metrics on http://" in line:
                return line.split("metrics on ", 1)[1].strip()
            if not line and proc.poll() is not None:
                break
    raise AssertionError(f"kdash serve did not start (rc={proc.poll()})")


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def _scrape_until(url: str, want: dict[tuple[str, tuple[tuple[str, str], ...]], float],
                  timeout: float = 20.0) -> Samples:
    deadline = time.monotonic() + timeout
    got: Samples = {}
    while time.monotonic() < deadline:
        got = _scrape(url)
        if all(got.get(k) == v for k, v in want.items()):
            return got
        time.sleep(0.2)
    missing = {k: (v, got.get(k)) for k, v in want.items() if got.get(k) != v}
    raise AssertionError(f"scrape never showed (want, got): {missing}")


def _once_json(d: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "dash", "--once", "--json", *_source_args(d)],
                         cwd=d, env=_env(d), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _part(name: str) -> tuple[tuple[str, str], ...]:
    return (("partition", name),)


def test_scrape_matches_once_json_while_the_run_progresses(serve, run_dir: Path) -> None:
    proc, url = serve
    assert url.startswith("http://127.0.0.1:")
    _scrape_until(url, {("kdash_partition_done", _part("B1")): 3,
                        ("kdash_gen_throughput_tokens_per_second", ()): 190.0})
    # The run moves on: a faster stretch (a new peak), then a slower one; B1 finishes, B2 starts.
    log = run_dir / "server.log"
    _append(log, _decode(64, 90000, 0.55, 1317.0, 4))
    for i in range(4):
        _append(log, _decode(120, 120000 + 100 * i, 0.97, 900.0 - i, 212 + i))
    _outputs(run_dir / "out" / "B1.jsonl", 7)
    _outputs(run_dir / "out" / "B2.jsonl", 12)
    got = _scrape_until(url, {("kdash_partition_done", _part("B1")): 10,
                              ("kdash_partition_done", _part("B2")): 12,
                              ("kdash_queued_requests", ()): 215})
    doc = _once_json(run_dir)

    last = doc["server"]["last_decode"]
    assert got[("kdash_gen_throughput_tokens_per_second", ())] == last["gen_throughput"] == 897.0
    assert got[("kdash_running_requests", ())] == last["running_req"]
    assert got[("kdash_queued_requests", ())] == last["queue_req"]
    assert got[("kdash_token_usage_ratio", ())] == last["token_usage"]
    assert got[("kdash_peak_gen_throughput_tokens_per_second", ())] == \
        doc["server"]["peak"]["gen_throughput"] == 1317.0
    assert got[("kdash_max_total_num_tokens", ())] == \
        doc["server"]["facts"]["max_total_num_tokens"] == 903439
    for p in doc["partitions"]:
        assert got[("kdash_partition_done", _part(p["name"]))] == p["done"]
        assert got[("kdash_partition_expected", _part(p["name"]))] == p["total"]
    # No GPU here: both say NVML is unavailable, so no GPU series are exported.
    assert doc["gpus"]["available"] is False
    assert not any(k[0].startswith("kdash_gpu_") for k in got)
    assert got[("kdash_source_up", (("source", "nvml"),))] == 0
    assert got[("kdash_source_up", (("source", "server_log"),))] == 1
    assert got[("kdash_source_up", (("source", "outputs"),))] == 1
    exported = {(dict(k[1])["alert"], dict(k[1])["subject"] or None)
                for k, v in got.items() if k[0] == "kdash_alert_active" and v == 1}
    # serve watched B1 finish, so it says so; a one-shot read finds B1 already done at start,
    # which is not news. Every other alert agrees.
    once_alerts = {(a["id"], a.get("subject")) for a in doc["alerts"]}
    assert ("partition_done", "B1") not in once_alerts
    assert exported == once_alerts | {("partition_done", "B1")}
    assert got[("kdash_alerts", (("severity", "info"),))] == \
        sum(1 for a in doc["alerts"] if a["severity"] == "info") + 1


def test_a_real_scrape_passes_the_checks_of_promtool_check_metrics(serve) -> None:
    from exposition_lint import lint, promtool_problems

    _, url = serve
    _scrape_until(url, {("kdash_partition_done", _part("B1")): 3})
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    assert "kdash_partition_expected{" in text and "kdash_run_expected " in text
    assert lint(text) == []
    checked = promtool_problems(text)
    assert checked is None or checked[0] == 0, checked


def _listening_ports(pid: int) -> set[int]:
    proc = psutil.Process(pid)
    procs = [proc, *proc.children(recursive=True)]
    return {c.laddr.port for p in procs for c in p.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN}


def test_serve_listens_only_on_its_port_and_stops_on_sigterm(serve) -> None:
    proc, url = serve
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    assert _listening_ports(proc.pid) == {port}
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 128 + signal.SIGTERM  # 143, as a shell expects
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP], ids=["SIGINT", "SIGHUP"])
def test_serve_stops_on_sigint_and_sighup(serve, sig: signal.Signals) -> None:
    proc, url = serve
    _scrape(url)
    proc.send_signal(sig)
    assert proc.wait(timeout=15) == 128 + sig
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read()


def test_busy_port_is_one_line_and_exit_2(run_dir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "dash", "serve", "--metrics-port", str(port),
             *_source_args(run_dir)],
            cwd=run_dir, env=_env(run_dir), capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and f"127.0.0.1:{port}" in out.stderr


def test_serve_without_port_is_a_usage_error(run_dir: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "dash", "serve", *_source_args(run_dir)],
                         cwd=run_dir, env=_env(run_dir), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "--metrics-port" in out.stderr


def test_once_opens_no_listening_socket(run_dir: Path, monkeypatch, capsys) -> None:
    from dash.commands.cli import main
    from dash.core.config import Config
    from dash.sources.prom_export import start_exporter

    listened: list[object] = []
    real_listen = socket.socket.listen

    def spy(self: socket.socket, *args: int) -> None:
        listened.append(self.getsockname())
        real_listen(self, *args)

    monkeypatch.setattr(socket.socket, "listen", spy)
    for key, value in _env(run_dir).items():
        if key.startswith("XDG_"):
            monkeypatch.setenv(key, value)
    monkeypatch.chdir(run_dir)
    assert main(["--once", "--json", *_source_args(run_dir)]) == 0
    assert json.loads(capsys.readouterr().out)["partitions"]
    assert listened == []
    # The spy does see a listener when one is asked for.
    start_exporter(Config(metrics_port=0), lambda: None).close()
    assert len(listened) == 1


class _DashboardInPty:
    """The real dashboard in a pseudo-terminal, drained so it never blocks on a full pty."""

    def __init__(self, run_dir: Path, extra: list[str]) -> None:
        import pty

        self.master, slave = pty.openpty()
        env = _env(run_dir) | {"TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        self.proc = subprocess.Popen([sys.executable, "-m", "dash", *_source_args(run_dir), *extra],
                                     cwd=run_dir, env=env, stdin=slave, stdout=slave,
                                     stderr=slave, close_fds=True)
        os.close(slave)
        self.drawn = 0

    def drain(self, seconds: float) -> None:
        """Read what the app draws for `seconds` (or until it exits)."""
        sel = selectors.DefaultSelector()
        sel.register(self.master, selectors.EVENT_READ)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.proc.poll() is None:
            if sel.select(timeout=0.2):
                try:
                    self.drawn += len(os.read(self.master, 65536))
                except OSError:
                    break

    def wait_drawn(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.drawn <= 2000 and time.monotonic() < deadline and self.proc.poll() is None:
            self.drain(0.2)
        self.drain(2.0)  # let its workers run for a couple of seconds
        assert self.proc.poll() is None, "the dashboard exited"
        assert self.drawn > 2000, "the dashboard drew nothing"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        os.close(self.master)


def test_plain_dashboard_opens_no_listening_socket(run_dir: Path) -> None:
    dash = _DashboardInPty(run_dir, [])
    try:
        dash.wait_drawn()
        assert _listening_ports(dash.proc.pid) == set()
    finally:
        dash.close()


def test_dashboard_with_metrics_port_exports_what_it_shows(run_dir: Path) -> None:
    with socket.socket() as probe:  # a free port to ask for
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dash = _DashboardInPty(run_dir, ["--metrics-port", str(port)])
    try:
        dash.wait_drawn()
        assert _listening_ports(dash.proc.pid) == {port}
        got = _scrape_until(f"http://127.0.0.1:{port}/metrics",
                            {("kdash_gen_throughput_tokens_per_second", ()): 190.0,
                             ("kdash_max_total_num_tokens", ()): 903439.0})
        assert got[("kdash_partition_done", (("partition", "B1"),))] == 3.0
    finally:
        dash.close()


class _ServeThread:
    """The serve loop on its own event loop thread, stoppable from the test."""

    def __init__(self, cfg, latest, **kwargs) -> None:
        import asyncio
        import threading

        from dash.commands.serve import serve

        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self.error: BaseException | None = None

        def main() -> None:
            try:
                self._loop.run_until_complete(serve(cfg, self._stop, latest.publish, **kwargs))
            except BaseException as exc:  # surfaced by stop()
                self.error = exc

        self._thread = threading.Thread(target=main, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=15)
        assert not self._thread.is_alive(), "the serve loop did not stop"
        self._loop.close()
        if self.error is not None:
            raise self.error


def test_simulated_run_scrape_matches_once_json(tmp_path: Path, monkeypatch) -> None:
    import dataclasses
    import io

    from dash.commands.once import run_once
    from dash.commands.serve import Latest
    from dash.sim.run import SimRun
    from dash.sources.prom_export import start_exporter

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    sim = SimRun(tmp_path / "run", scenario="healthy", gpus=2)
    sim.start(background=False)  # HTTP on 127.0.0.1; the test moves simulated time itself
    sim.advance_to(90)
    cfg = dataclasses.replace(sim.config(), metrics_port=0, refresh=0.2, http_interval=0.3,
                              nvml_interval=0.5, alert_history=False)
    latest = Latest()
    handle = start_exporter(cfg, latest.get)
    loop = _ServeThread(cfg, latest, clock=sim.clock(), nvml_module=sim.nvml)
    try:
        for t in (90, 240, 420):  # the run progresses between scrapes
            sim.advance_to(t)
            out = io.StringIO()
            assert run_once(cfg, as_json=True, nvml_module=sim.nvml, out=out) == 0
            doc = json.loads(out.getvalue())
            last = doc["server"]["last_decode"]
            want = {("kdash_gen_throughput_tokens_per_second", ()): last["gen_throughput"],
                    ("kdash_running_requests", ()): last["running_req"],
                    ("kdash_queued_requests", ()): last["queue_req"],
                    ("kdash_token_usage_ratio", ()): last["token_usage"],
                    ("kdash_server_http_up", ()): 1.0 if doc["server"]["http"]["state"] == "up"
                    else 0.0}
            for p in doc["partitions"]:
                want[("kdash_partition_done", _part(p["name"]))] = p["done"]
                want[("kdash_partition_expected", _part(p["name"]))] = p["total"]
            for g in doc["gpus"]:
                gpu = (("gpu", str(g["index"])),)
                want[("kdash_gpu_memory_used_bytes", gpu)] = g["memory_used"]
                want[("kdash_gpu_memory_free_bytes", gpu)] = g["memory_free"]
            got = _scrape_until(handle.url, want)
            assert len(doc["gpus"]) == 2
            assert got[("kdash_max_total_num_tokens", ())] == \
                doc["server"]["facts"]["max_total_num_tokens"]
            assert got[("kdash_peak_gen_throughput_tokens_per_second", ())] == \
                doc["server"]["peak"]["gen_throughput"]
            assert all(got[("kdash_source_up", (("source", s),))] == 1
                       for s in ("server_log", "http", "nvml", "client_log", "outputs"))
    finally:
        loop.stop()
        handle.close()
        sim.stop()


async def test_a_backlog_bigger_than_one_read_is_drained_in_one_refresh(tmp_path: Path) -> None:
    from dash.commands.serve import ServeLoop
    from dash.core.config import Config
    from dash.sources.files import MAX_READ_PER_POLL

    log = tmp_path / "server.log"
    log.write_text("")
    loop = ServeLoop(Config(log=log, url="", backfill_bytes=0, alert_history=False),
                     lambda _snap: None)
    try:
        await loop.files()  # following starts at the (empty) end
        line = "x" * 1023 + "\n"
        n = MAX_READ_PER_POLL * 3 // 2 // len(line)  # one and a half capped reads
        with log.open("a") as fh:
            fh.write(line * n)
        await loop.files()
        assert loop.state.server_log.snapshot(0.0).lines == n
    finally:
        await loop.close()


STUCK_S = 3
"""The README's stuck query says 60 s; the test waits this long instead."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _prom_query(base: str, promql: str) -> list[dict]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as resp:
        doc = json.loads(resp.read())
    assert doc["status"] == "success", doc
    return doc["data"]["result"]


def _prom_until(base: str, promql: str, *, empty: bool = False,
                timeout: float = 30.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        got = _prom_query(base, promql)
        if bool(got) != empty:
            return got
        assert time.monotonic() < deadline, f"{promql!r} never {'empty' if empty else 'fired'}"
        time.sleep(0.25)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("prometheus") is None,
                    reason="prometheus is not installed (Debian: apt-get install prometheus)")
def test_the_readme_stuck_queries_fire_for_a_frozen_kdash(serve, tmp_path: Path) -> None:
    """Against a real Prometheus scraping `kdash serve` on 127.0.0.1: a frozen kdash fails its
    scrapes and Prometheus marks its series stale, so only queries that look back still see it
    (README, "Many boxes")."""
    proc, url = serve
    target = url.split("//", 1)[1].split("/", 1)[0]
    port = _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text("global: {scrape_interval: 1s, scrape_timeout: 500ms}\n"
                      "scrape_configs:\n"
                      f"  - job_name: kdash\n    static_configs: [{{targets: ['{target}']}}]\n")
    prom = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:  # Prometheus takes a moment to listen
            try:
                _prom_query(base, "up")
                break
            except OSError:
                assert time.monotonic() < deadline and prom.poll() is None, "prometheus did not start"
                time.sleep(0.25)
        _prom_until(base, 'up{job="kdash"} == 1')
        stuck = f"time() - max_over_time(kdash_snapshot_timestamp_seconds[10m]) > {STUCK_S}"
        plain = f"time() - kdash_snapshot_timestamp_seconds > {STUCK_S}"
        assert _prom_query(base, stuck) == [] and _prom_query(base, plain) == []
        proc.send_signal(signal.SIGSTOP)  # frozen: it holds its port but answers nothing
        try:
            _prom_until(base, 'up{job="kdash"} == 0')
            assert _prom_until(base, stuck)[0]["metric"]["job"] == "kdash"
            assert _prom_query(base, plain) == []  # the old query: stale series, nothing to compare
        finally:
            proc.send_signal(signal.SIGCONT)
        _prom_until(base, 'up{job="kdash"} == 1')
        _prom_until(base, stuck, empty=True)
    finally:
        prom.terminate()
        prom.wait(timeout=20)


async def test_serve_keeps_the_launches_of_its_log(tmp_path: Path) -> None:
    from core.test_launches import two_starts

    from dash.commands.serve import ServeLoop
    from dash.core.config import Config
    from dash.sources.launch_store import LaunchStore

    log = tmp_path / "server.log"
    log.write_text("\n".join(two_starts()) + "\n")
    cfg = Config(log=log, url="", alert_history=False, state_dir=tmp_path / "state")
    loop = ServeLoop(cfg, lambda _snap: None)
    try:
        await loop.files()
        await loop.tick()
    finally:
        await loop.close()
    kept, notice = LaunchStore(tmp_path / "state", log).load()
    assert notice is None and [x.outcome for x in kept] == ["oom", "running"]
    again = ServeLoop(cfg, lambda _snap: None)  # a later serve remembers them
    try:
        assert [x.earlier for x in again.state.launches.launches()] == [True, True]
    finally:
        await again.close()
