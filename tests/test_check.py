"""`kdash check`: one line per problem and Nagios exit codes, on simulated runs (real files,
a real HTTP server on 127.0.0.1), through the CLI entry point."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dash.commands.cli import main
from dash.sim import SimRun


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.chdir(tmp_path)


def _sim(tmp_path: Path, scenario: str, at: float) -> Iterator[SimRun]:
    # Stamped so that simulated second `at` is now: the log is as fresh as a live one.
    run = SimRun(tmp_path / "run", scenario, start_epoch=time.time() - at)
    run.start(background=False)
    run.advance_to(at)
    try:
        yield run
    finally:
        run.stop()


@pytest.fixture
def healthy(tmp_path: Path) -> Iterator[SimRun]:
    yield from _sim(tmp_path, "healthy", 120)


@pytest.fixture
def after_oom(tmp_path: Path) -> Iterator[SimRun]:
    yield from _sim(tmp_path, "oom-crash-restart", 320)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _check(run: SimRun, *extra: str, url: str | None = None) -> list[str]:
    return ["check", "--window", "1", "--log", str(run.server_log),
            "--outputs", str(run.outputs_dir / "*.jsonl"),
            "--inputs", str(run.inputs_dir / "*.jsonl"), "--url", url or run.url, *extra]


def test_ok_is_0_with_one_line(healthy: SimRun, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_check(healthy)) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("OK kdash: log live, http up")


def test_warn_is_1_a_live_log_and_nothing_at_the_url(
        healthy: SimRun, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_check(healthy, url=f"http://127.0.0.1:{_free_port()}")) == 1
    out = capsys.readouterr().out.splitlines()
    assert out and all(line.startswith("WARN ") for line in out)
    assert any(line.startswith("WARN http_unreachable: no answer at http://127.0.0.1:")
               for line in out)
    assert not any("CRIT" in line for line in out)  # the server works: its log is live


def test_crit_is_2_after_an_oom(after_oom: SimRun, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_check(after_oom)) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("CRIT server_oom: CUDA out of memory")
    assert "--mem-fraction-static" in out[0]  # the line carries the fix
    assert all(line.split()[0] in ("CRIT", "WARN") for line in out)


def test_unknown_is_3_when_a_source_cannot_be_read(
        healthy: SimRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _check(healthy)
    argv[argv.index("--log") + 1] = str(tmp_path / "not-there.log")
    assert main(argv) == 3
    out = capsys.readouterr().out
    assert "UNKNOWN server_log: " in out and "not there yet" in out


def test_unknown_is_3_for_a_glob_that_matches_nothing(
        healthy: SimRun, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _check(healthy)
    argv[argv.index("--outputs") + 1] = str(healthy.outputs_dir / "*.jsnl")
    assert main(argv) == 3
    assert "UNKNOWN outputs: no file matches --outputs" in capsys.readouterr().out


def test_unknown_is_3_with_nothing_to_watch_and_for_usage_errors(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 3
    assert capsys.readouterr().out.startswith("UNKNOWN kdash: nothing to watch")
    assert main(["check", "--bogus"]) == 3  # not 2: to Nagios that would mean CRITICAL
    err = capsys.readouterr().err
    assert err.startswith("kdash: ") and err.count("\n") == 1
    assert main(["check", "--log", "x.log", "--window", "-1"]) == 3
    assert "--window" in capsys.readouterr().err


def test_help_lists_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--help"]) == 0
    assert "0 ok, 1 warn, 2 crit, 3 unknown" in " ".join(capsys.readouterr().out.split())


def test_a_second_server_log_not_there_is_unknown(
        healthy: SimRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A PD pair or two nodes: the decode server's log is missing while the first one is live;
    # the check cannot vouch for that server, as it cannot for a single missing log.
    missing = tmp_path / "decode" / "server.log"
    assert main(["check", "--window", "0", "--no-http", "--log", str(healthy.server_log),
                 "--log", str(missing)]) == 3
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("UNKNOWN server_log[") and str(missing) in line for line in out)


def test_what_a_crash_caused_says_so_and_drops_its_own_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A vLLM engine's OOM 11 minutes ago: the crash and the silent log follow from it. The
    # silence's own fix ("idle if ..., hung if not") is not true of a server that died; the
    # line says what it follows from, as `--once` groups it.
    now = time.time()

    def stamp(t: float) -> str:
        return time.strftime("%m-%d %H:%M:%S", time.localtime(t))

    lines = [f"(APIServer pid=10) INFO {stamp(now - 900 + 10 * k)} [loggers.py:236] Engine 000: "
             "Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 500.0 tokens/s, "
             "Running: 20 reqs, Waiting: 0 reqs, GPU KV cache usage: 40.0%, Prefix cache hit "
             "rate: 0.0%" for k in range(24)]
    oom_at = stamp(now - 660)
    lines += [f"(EngineCore_DP0 pid=20) ERROR {oom_at} [core.py:1] EngineCore encountered a "
              "fatal error.",
              f"(EngineCore_DP0 pid=20) ERROR {oom_at} [core.py:1] torch.OutOfMemoryError: CUDA "
              "out of memory. Tried to allocate 2.00 GiB."]
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    os.utime(log, (now - 660, now - 660))
    assert main(["check", "--window", "0", "--no-http", "--log", str(log)]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("CRIT server_oom: ")
    silent = next(line for line in out if line.split()[1].startswith("server_silent"))
    assert "(follows from server_oom)" in silent and "Idle if" not in silent


def test_a_client_that_hung_before_the_check_is_warned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A cron `check` of a run whose client stopped writing 20 minutes ago (partitions in turn:
    # B1 finished, B2 where it stopped, B3 part-written by an earlier run, long before).
    out = tmp_path / "out"
    out.mkdir()
    for name, lines, ago in (("B1", 10, 3600), ("B2", 4, 1200), ("B3", 2, 86400)):
        path = out / f"{name}.jsonl"
        path.write_text('{"text": "x"}\n' * lines)
        os.utime(path, (time.time() - ago, time.time() - ago))
    args = ["check", "--window", "1", "--no-http", "--outputs", str(out / "*.jsonl"),
            "--expect", "B1=10", "--expect", "B2=10", "--expect", "B3=10"]
    assert main(args) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "WARN output_stalled[B2]: B2: no new output for 20 min at 4/10")
    (out / "B2.jsonl").write_text('{"text": "x"}\n' * 5)  # written again: nothing stalled
    assert main(args) == 0
