"""`kdash --once [--json]` end to end through the CLI, on real files."""

from __future__ import annotations

import json
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
    return tmp_path


def _args(*extra: str) -> list[str]:
    return ["--once", "--log", "server.log", "--client-log", "client.log",
            "--outputs", "prepared/*/responses.jsonl", "--inputs", "prepared/*/prompts.jsonl",
            "--url", "", *extra]


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
