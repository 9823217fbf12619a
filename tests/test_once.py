"""`kdash --once [--json]` end to end through the CLI, on real files."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from dash.commands.cli import main

DECODE = ("[2025-09-03 18:33:{s:02d} TP0] Decode batch. #running-req: 3, #token: 2740, "
          "token usage: 0.01, cuda graph: True, gen throughput (token/s): {g:.2f}, #queue-req: 0\n")


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name, n in (("B1", 4), ("B2", 2)):
        (tmp_path / "prepared" / name).mkdir(parents=True)
        (tmp_path / "prepared" / name / "responses.jsonl").write_text('{"x": 1}\n' * n)
        (tmp_path / "prepared" / name / "prompts.jsonl").write_text('{"p": 1}\n' * 10)
    (tmp_path / "server.log").write_text("".join(DECODE.format(s=i, g=40.0 + i) for i in range(5)))
    (tmp_path / "client.log").write_text("Resuming: 4 already done\r 40%|####| 4/10 [00:04<00:06, 1.0it/s]")
    hour_ago = time.time() - 3600  # outputs of an earlier session: nothing written lately
    for name in ("B1", "B2"):
        os.utime(tmp_path / "prepared" / name / "responses.jsonl", (hour_ago, hour_ago))
    return tmp_path


def _args(*extra: str, window: str = "0") -> list[str]:
    return ["--once", "--log", "server.log", "--client-log", "client.log",
            "--outputs", "prepared/*/responses.jsonl", "--inputs", "prepared/*/prompts.jsonl",
            "--url", "", "--window", window, *extra]


def test_json_document_has_the_contract_keys(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args("--json", "--expect", "B2=5")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"server", "partitions", "client", "gpus", "alerts"}
    s = doc["server"]
    assert s["last_decode"]["gen_throughput"] == 44.0
    assert s["peak"]["gen_throughput"] == 44.0 and s["peak"]["ts"] == "2025-09-03T18:33:04"
    assert isinstance(s["events"], list) and isinstance(s["facts"], dict)
    assert set(s["http"]) >= {"state", "since", "latency", "metrics"}
    parts = {p["name"]: p for p in doc["partitions"]}
    assert set(parts) == {"B1", "B2"}
    assert {k: parts["B1"][k] for k in ("done", "total", "at_start", "status")} == \
        {"done": 4, "total": 10, "at_start": 4, "status": "pending"}
    assert parts["B2"]["total"] == 5  # --expect wins over the input file's count
    assert set(parts["B1"]) >= {"name", "path", "rate_per_min", "eta_s"}
    c = doc["client"]
    assert c["log_bytes"] > 0 and c["last_progress"]["done"] == 4 and c["processes"] is None
    assert isinstance(doc["gpus"], (list, dict)) and isinstance(doc["alerts"], list)


def test_text_report(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args()) == 0
    out = capsys.readouterr().out
    assert "B1" in out and "4/10" in out and "44.0 tok/s" in out


def test_waits_for_the_first_count_of_a_big_output(run_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("dash.sources.counts.BIG_COUNT", 1000)
    (run_dir / "prepared" / "B1" / "responses.jsonl").write_text('{"x": 1}\n' * 20000)
    assert main(_args("--json")) == 0
    parts = {p["name"]: p for p in json.loads(capsys.readouterr().out)["partitions"]}
    assert parts["B1"]["done"] == 20000 and parts["B1"]["status"] != "counting"


def test_bad_glob_is_one_line_and_exit_2(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--once", "--outputs", "out/[x", "--url", ""]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "glob" in err


def test_partitions_with_prompts_or_expect_but_no_output_yet_are_pending(
        run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run_dir / "prepared" / "B3").mkdir()
    (run_dir / "prepared" / "B3" / "prompts.jsonl").write_text('{"p": 1}\n' * 7)
    assert main(_args("--json", "--expect", "B4=3")) == 0
    doc = json.loads(capsys.readouterr().out)
    parts = {p["name"]: p for p in doc["partitions"]}
    assert list(parts) == ["B1", "B2", "B3", "B4"]
    for name, total in (("B3", 7), ("B4", 3)):
        p = parts[name]
        assert {k: p[k] for k in ("done", "total", "at_start", "status", "path")} == \
            {"done": 0, "total": total, "at_start": 0, "status": "pending",
             "path": f"prepared/{name}/responses.jsonl"}
    assert (doc["totals"]["done"], doc["totals"]["total"]) == (4 + 2, 10 + 10 + 7 + 3)


def test_window_0_is_an_instant_snapshot_with_rates_unknown(
        run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args("--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["sample"]["window_s"] == 0 and doc["sample"]["rates"] == "unknown"
    assert all(p["rate_per_min"] is None for p in doc["partitions"])
    assert main(_args()) == 0
    assert "instant snapshot of --window 0: rates unknown" in capsys.readouterr().out


def test_a_window_measures_a_partition_being_written_as_running_with_its_rate(
        run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run_dir / "prepared" / "B2" / "responses.jsonl"
    stop = threading.Event()

    def client() -> None:  # one sample every 0.1 s: 600 a minute
        while not stop.wait(0.1):
            with out.open("a") as fh:
                fh.write('{"x": 1}\n')

    writer = threading.Thread(target=client)
    writer.start()
    try:
        assert main(_args("--json", "--expect", "B2=100000", window="1.5")) == 0
    finally:
        stop.set()
        writer.join()
    doc = json.loads(capsys.readouterr().out)
    parts = {p["name"]: p for p in doc["partitions"]}
    b2 = parts["B2"]
    assert b2["status"] == "running" and b2["last_write"] is not None
    assert 300 <= b2["rate_per_min"] <= 900
    assert parts["B1"]["status"] == "pending"  # written an hour ago: not seen being written
    assert doc["sample"]["window_s"] == 1.5 and doc["sample"]["sampled_s"] >= 1.5


def test_a_window_measures_the_samples_token_rate(run_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Samples of 100 tokens every 0.1 s: about 1,000 tok/s in the partition and the totals,
    measured over the window as the partitions' line rates are."""
    out = run_dir / "prepared" / "B2" / "responses.jsonl"
    out.write_text("")
    stop = threading.Event()
    record = json.dumps({"text": "an answer", "meta_info": {
        "finish_reason": {"type": "stop"}, "completion_tokens": 100}}) + "\n"

    def client() -> None:
        while not stop.wait(0.1):
            with out.open("a") as fh:
                fh.write(record)

    writer = threading.Thread(target=client)
    writer.start()
    try:
        assert main(_args("--json", window="2")) == 0
    finally:
        stop.set()
        writer.join()
    doc = json.loads(capsys.readouterr().out)
    (b2,) = [p for p in doc["partitions"] if p["name"] == "B2"]
    rate = b2["quality"]["tokens_per_s"]
    assert rate is not None and 500 <= rate <= 1500
    assert doc["totals"]["output_tokens_per_s"] == rate


def test_a_finished_partition_says_done_as_the_dashboard_does(
        run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args("--expect", "B1=4", "--expect", "B2=10")) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()
             if line.startswith("  B")}
    assert "[done]" in lines["B1"] and lines["B1"].endswith("eta done")
    assert "[done]" not in lines["B2"] and lines["B2"].endswith("eta ?")


def test_more_lines_than_the_total_are_said_not_shown_as_plain_done(
        run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """More lines than prompts are duplicates or a wrong total: the count is not what it
    seems (the dashboard's details once said `(-2 left)`)."""
    assert main(_args("--expect", "B1=2", "--expect", "B2=10")) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()
             if line.startswith("  B")}
    assert lines["B1"].endswith("; 2 more than the total: duplicates, or a wrong total?")
    assert "more than the total" not in lines["B2"]


def test_a_file_written_seconds_ago_counts_as_running_without_a_write_in_the_window(
        run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.utime(run_dir / "prepared" / "B2" / "responses.jsonl")  # written just now
    assert main(_args("--json", window="0.2")) == 0
    parts = {p["name"]: p for p in json.loads(capsys.readouterr().out)["partitions"]}
    assert parts["B2"]["status"] == "running" and parts["B2"]["last_write"] is not None


def test_once_reports_a_server_that_does_not_answer_as_down(
        run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = [a if a != "" else f"http://127.0.0.1:{port}" for a in _args("--json", window="1")]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["server"]["http"]["state"] == "down"
    assert doc["sample"]["http_polls"] == 3  # down_polls, spread over the window
    # The log is an old one (stamps from 2025): not live, so the server reads as down.
    assert doc["server"]["liveness"]["down"] is True
    assert "server_down" in {a["id"] for a in doc["alerts"]}


def test_a_glob_that_matches_nothing_is_named(run_dir: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--once", "--window", "0", "--url", "", "--outputs", "out/*.jsnl"]) == 0
    out = capsys.readouterr().out
    assert "no file matches --outputs 'out/*.jsnl'" in out


def test_a_vllm_oom_names_the_fix_in_vllm_flags(real_logs: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    # vLLM's own arguments line, then a real vLLM OOM traceback: the fix is vLLM's flag, with
    # the value the server ran with, and the server panel's fraction is that value too.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    args = ("INFO 10-11 12:27:20 [utils.py:326] non-default args: {'model': "
            "'meta-llama/Llama-3.1-8B-Instruct', 'gpu_memory_utilization': 0.95}\n")
    real = (real_logs / "vllm-9290-oom-engine-error-traceback.log").read_text(encoding="utf-8")
    (tmp_path / "server.log").write_text(args + real, encoding="utf-8")
    main(["--once", "--json", "--log", "server.log", "--no-http", "--window", "0"])
    doc = json.loads(capsys.readouterr().out)
    (oom,) = [a for a in doc["alerts"] if a["id"] == "server_oom"]
    assert "--gpu-memory-utilization (now 0.95; try 0.90)" in oom["hint"]
    assert "--mem-fraction-static" not in oom["hint"]
    assert doc["server"]["facts"]["gpu_memory_utilization"] == 0.95


def test_text_on_a_terminal_fits_its_width_and_a_pipe_gets_whole_lines(
        run_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (run_dir / "server.log").write_text(
        "[2025-09-03 18:32:59] Capture cuda graph begin. This can take up to several minutes. "
        "avail mem=11.35 GB\n" + "".join(DECODE.format(s=i, g=40.0 + i) for i in range(5)))
    assert main(_args()) == 0
    whole = capsys.readouterr().out
    assert any(len(line) > 80 for line in whole.splitlines())  # captured: not a terminal

    master, slave = os.openpty()  # a real terminal: what a user at 80 columns runs it in
    monkeypatch.setenv("COLUMNS", "80")
    with open(slave, "w", encoding="utf-8") as tty:
        monkeypatch.setattr("sys.stdout", tty)
        assert main(_args()) == 0
        tty.flush()
        fitted = os.read(master, 1 << 16).decode().replace("\r\n", "\n")
    os.close(master)
    rows = fitted.splitlines()
    assert rows and max(map(len, rows)) <= 80
    # wrapped, nothing cut: the event's message whole on the rows after its label
    assert "several minutes. avail mem=11.35 GB" in " ".join(fitted.split())
    decode = next(i for i, r in enumerate(rows) if r.startswith("  last decode  gen"))
    assert rows[decode + 1].startswith(" " * 15 + "(")  # under `gen`: the labels stay a column
    event = next(i for i, r in enumerate(rows) if "Capture cuda graph begin" in r)
    assert rows[event + 1].startswith(" " * 15) and rows[event + 1].strip()


def test_fit_keeps_short_lines_and_hangs_a_line_without_a_label() -> None:
    from dash.commands.once_text import fit

    assert fit("gpus        NVML unavailable", 80) == ["gpus        NVML unavailable"]
    rows = fit("      hint: " + "restart the server with a smaller value " * 4, 60)
    assert all(len(r) <= 60 for r in rows) and all(r.startswith(" " * 10) for r in rows[1:])
    assert fit("x" * 130, 60) == ["x" * 60, "    " + "x" * 56, "    " + "x" * 14]


def test_a_password_in_the_url_is_never_shown(run_dir: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from dash.core.state.http_state import shown_url

    for extra in ((), ("--json",)):
        assert main(["--once", "--url", "http://kd:s3cret@127.0.0.1:1", "--window", "0",
                     *extra]) == 0
        out = capsys.readouterr().out
        assert "s3cret" not in out and "http://kd:***@127.0.0.1:1" in out
    assert shown_url("http://127.0.0.1:30000") == "http://127.0.0.1:30000"
    assert shown_url("https://kd@host/base") == "https://kd@host/base"  # no password: as it is
