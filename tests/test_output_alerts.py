"""Each output alert on hand-made files (through `kdash outputs`) and on simulated runs (through
the live collector); the limit named from the records or the client's command line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from dash.commands.outputs import run_outputs
from dash.core.alerts.engine import AlertEngine
from dash.core.alerts.model import RuleContext
from dash.core.alerts.rules_outputs import OUTPUT_RULES, rule_outputs_truncated
from dash.core.config import AlertConfig, Config
from dash.core.samples.limits import limit_flags, name_limit
from dash.core.snapshot import ClientSnapshot, ProcessInfo
from dash.core.state.run import RunState
from dash.sim import SimRun
from dash.sources.collector import Collector, apply_files

SIM_T0 = 1_780_000_000.0


def sglang(i: int, *, finish: str = "stop", text: str | None = None, tokens: int = 500) -> dict:
    reason = {"type": "length", "length": 10240} if finish == "length" else {"type": "stop",
                                                                             "matched": 1}
    return {"id": f"s-{i}", "text": f"<think>\nhm\n</think>\n\nanswer {i}" if text is None else text,
            "meta_info": {"finish_reason": reason, "prompt_tokens": 900,
                          "completion_tokens": 10240 if finish == "length" else tokens}}


def write(path: Path, records: list, tail: str = "") -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)


def alerts_of(tmp_path: Path, capsys, **cfg) -> dict[str, dict]:
    run_outputs(Config(outputs=(str(tmp_path / "*.jsonl"),), **cfg), as_json=True)
    doc = json.loads(capsys.readouterr().out)
    return {a["id"]: a for a in doc["alerts"]}


def test_truncated(tmp_path: Path, capsys) -> None:
    write(tmp_path / "B2.jsonl", [sglang(i, finish="length" if i % 4 == 0 else "stop")
                                  for i in range(100)])
    a = alerts_of(tmp_path, capsys)["outputs_truncated"]
    assert a["subject"] == "B2" and "25 of 100" in a["message"] and "(25%)" in a["message"]
    assert "limit 10,240 tokens" in a["evidence"]
    # the message names the limit too: at 80x24 it shows where the evidence may not
    assert a["message"].endswith("stopped at the 10,240-token limit")


def test_invalid_and_partial_lines(tmp_path: Path, capsys) -> None:
    # A crashed writer's half line, then the next run's lines; and a partial last line.
    write(tmp_path / "B3.jsonl", [sglang(i) for i in range(30)],
          tail='{"id": "s-30", "text": "cut\n' + json.dumps(sglang(31)) + '\n{"id": "s-32"')
    a = alerts_of(tmp_path, capsys)
    assert set(a) == {"outputs_invalid"}
    assert "1 of 32 lines are not JSON" in a["outputs_invalid"]["message"]
    assert "line 31" in a["outputs_invalid"]["evidence"]


def test_errors(tmp_path: Path, capsys) -> None:
    records = [sglang(i) for i in range(40)] + [
        {"id": "e", "error": {"message": "The input (40211 tokens) is longer than the model's "
                                         "context length (32768 tokens)."}}] * 3
    write(tmp_path / "B4.jsonl", records)
    a = alerts_of(tmp_path, capsys)["outputs_errors"]
    assert "3 of 43" in a["message"] and "context length" in a["evidence"]


def test_empty(tmp_path: Path, capsys) -> None:
    records = [sglang(i) for i in range(40)] + [sglang(99, text="<think>\nlong\n</think>\n\n")] * 4
    write(tmp_path / "B5.jsonl", records)
    a = alerts_of(tmp_path, capsys)["outputs_empty"]
    assert "4 of 44" in a["message"] and "no answer after the reasoning" in a["hint"].lower()


def test_reasoning_missing_configured_and_inferred(tmp_path: Path, capsys) -> None:
    write(tmp_path / "B6.jsonl", [sglang(i, text=f"plain answer {i}") for i in range(50)])
    assert "reasoning_missing" not in alerts_of(tmp_path, capsys)  # nothing says it should
    cfg = Config(outputs=(str(tmp_path / "*.jsonl"),))
    from dash.sources.config_files import build_config

    (tmp_path / "kdash.toml").write_text("[outputs]\nexpect_reasoning = true\n")
    cfg = build_config({"outputs": [str(tmp_path / "*.jsonl")]}, cwd=tmp_path,
                       user_file=tmp_path / "none.toml")
    run_outputs(cfg, as_json=True)
    doc = json.loads(capsys.readouterr().out)
    (a,) = [a for a in doc["alerts"] if a["id"] == "reasoning_missing"]
    assert "50 of 50" in a["message"] and "expect_reasoning" in a["evidence"]
    # Inferred: the samples before a chat-template change carried reasoning.
    write(tmp_path / "B6.jsonl", [sglang(i) for i in range(100)]
          + [sglang(i, text=f"plain answer {i}") for i in range(100, 150)])
    (tmp_path / "kdash.toml").unlink()
    a = alerts_of(tmp_path, capsys)["reasoning_missing"]
    assert "50 of 150" in a["message"] and "67% of its samples since start" in a["evidence"]


def test_a_healthy_file_raises_nothing(tmp_path: Path, capsys) -> None:
    write(tmp_path / "B1.jsonl", [sglang(i, finish="length" if i % 50 == 0 else "stop")
                                  for i in range(200)])
    assert alerts_of(tmp_path, capsys) == {}


@pytest.mark.parametrize(("cmdline", "flags"), [
    ("python run_inference.py --short-max-tokens 10240 --long-max-tokens 16384",
     (("--short-max-tokens", 10240), ("--long-max-tokens", 16384))),
    ("python x.py --max-tokens=4096 --temperature 0.6", (("--max-tokens", 4096),)),
    ("python x.py --max_new_tokens 512", (("--max_new_tokens", 512),)),
    ("python x.py --max-model-len 32768", ()),
])
def test_limit_flags(cmdline: str, flags) -> None:
    assert limit_flags(cmdline) == flags


def test_the_limit_is_named_from_the_command_line(tmp_path: Path) -> None:
    assert name_limit(10240, limit_flags("a --long-max-tokens 16384 --short-max-tokens 10240")) \
        == "--short-max-tokens 10240"
    write(tmp_path / "B2.jsonl", [sglang(i, finish="length" if i % 3 == 0 else "stop")
                                  for i in range(60)])
    state = _state_on(tmp_path)
    state.client.set_processes((ProcessInfo(7, "python", "python run_inference.py "
                                            "--short-max-tokens 10240 --long-max-tokens 16384",
                                            None),))
    snap = state.snapshot(SIM_T0)
    assert isinstance(snap.client, ClientSnapshot)
    (f,) = [f for rule in OUTPUT_RULES for f in rule(_ctx(snap)) if f.id == "outputs_truncated"]
    assert "--short-max-tokens 10240 on the client's command line" in f.evidence
    assert f.message.endswith("stopped at the token limit (--short-max-tokens 10240)")


def _state_on(tmp_path: Path) -> RunState:
    cfg = Config(outputs=(str(tmp_path / "*.jsonl"),), url="", process="run_inference")
    state = RunState(cfg)
    collector = Collector(cfg)
    try:
        apply_files(state, collector.read_files(), SIM_T0)
    finally:
        collector.close()
    return state


def _ctx(snap):
    from dash.core.alerts.model import RuleContext

    return RuleContext(snap, snap.now, AlertConfig(), frozenset(), {})


@pytest.mark.parametrize(("scenario", "until", "expect"), [
    ("truncated-outputs", 900, "outputs_truncated"),
    ("missing-reasoning", 300, "reasoning_missing"),
])
def test_simulated_runs_raise_their_alert_live(tmp_path: Path, scenario: str, until: int,
                                               expect: str) -> None:
    run = SimRun(tmp_path, scenario, seed=0, gpus=1, start_epoch=SIM_T0)
    cfg = dataclasses.replace(run.config(), url="")
    state = RunState(cfg)
    collector = Collector(cfg)
    fired: set[str] = set()
    try:
        for t in range(0, until + 1, 10):
            run.advance_to(t)
            read = collector.read_files()
            apply_files(state, read, SIM_T0 + t)
            while read.more or read.counting:
                collector.wait_counts()
                read = collector.read_files()
                apply_files(state, read, SIM_T0 + t)
            fired |= {a.id for a in state.tick(SIM_T0 + t).new if a.id.startswith(("outputs",
                                                                                     "reasoning"))}
    finally:
        collector.close()
    assert expect in fired
    healthy = {"truncated-outputs": "reasoning_missing", "missing-reasoning": "outputs_truncated"}
    assert healthy[scenario] not in fired


def test_the_healthy_simulation_raises_no_output_alert(tmp_path: Path) -> None:
    run = SimRun(tmp_path, "healthy", seed=0, gpus=1, start_epoch=SIM_T0)
    cfg = dataclasses.replace(run.config(), url="")
    state = RunState(cfg)
    collector = Collector(cfg)
    try:
        for t in range(0, 601, 20):
            run.advance_to(t)
            apply_files(state, collector.read_files(), SIM_T0 + t)
            assert not [a for a in state.tick(SIM_T0 + t).new if a.id.startswith("outputs")]
    finally:
        collector.close()
    engine = AlertEngine(AlertConfig(), rules=OUTPUT_RULES)
    assert not engine.evaluate(state.snapshot(SIM_T0 + 600), SIM_T0 + 600).new


def test_a_crashed_and_failing_client_on_a_simulated_run(tmp_path: Path) -> None:
    """Invalid lines and error records appended to a simulated run's output, as a client that
    was killed mid-line and then got errors back would leave them, fire live; and the empty
    answers of samples cut off while reasoning fire in truncated-outputs."""
    run = SimRun(tmp_path, "truncated-outputs", seed=0, gpus=1, start_epoch=SIM_T0)
    cfg = dataclasses.replace(run.config(), url="")
    state = RunState(cfg)
    collector = Collector(cfg)
    out = run.outputs_dir / "B2_opencodeinstruct.jsonl"
    fired: dict[str, str] = {}
    try:
        for t in range(0, 901, 10):
            run.advance_to(t)
            if t == 300:
                with out.open("a") as fh:  # killed mid-line, then restarted
                    fh.write('{"id": "B2_opencodeinstruct-0', )
                    fh.write("\n" + "".join(json.dumps(
                        {"id": f"e{i}", "error": {"message": "Request timed out."}}) + "\n"
                        for i in range(12)))
            apply_files(state, collector.read_files(), SIM_T0 + t)
            fired.update({a.id: a.evidence for a in state.tick(SIM_T0 + t).new})
    finally:
        collector.close()
    assert {"outputs_invalid", "outputs_errors", "outputs_empty", "outputs_truncated"} <= set(fired)
    assert "Request timed out." in fired["outputs_errors"]


def test_a_configured_path_that_never_matches_is_a_notice(tmp_path: Path) -> None:
    from dash.core.samples.fieldspec import OutputFields
    from dash.core.samples.paths import parse_path

    write(tmp_path / "B1.jsonl", [sglang(i) for i in range(30)])
    cfg = Config(outputs=(str(tmp_path / "*.jsonl"),), url="",
                 output_fields=OutputFields(text=parse_path("result.answer")))
    state = RunState(cfg)
    collector = Collector(cfg)
    try:
        apply_files(state, collector.read_files(), SIM_T0)
    finally:
        collector.close()
    snap = state.snapshot(SIM_T0)
    assert any("[outputs] text = 'result.answer' matched none" in n for n in snap.notices)
    (p,) = snap.partitions
    assert p.quality is not None and [f.path for f in p.quality.unmatched] == ["result.answer"]
    assert p.quality.window.samples == 30  # the detected text is used meanwhile


def test_figures_unchanged_give_the_same_snapshot_and_the_rules_findings_again(
        tmp_path: Path) -> None:
    """Between two reads a partition's snapshot is the same object, and the rules give the
    findings they gave for it; what else they read (the command line) still counts at once."""
    write(tmp_path / "B2.jsonl", [sglang(i, finish="length" if i % 3 == 0 else "stop")
                                  for i in range(60)])
    state = _state_on(tmp_path)
    memory: dict = {}
    ctx = lambda snap: RuleContext(snap, snap.now, AlertConfig(), frozenset(), memory)  # noqa: E731

    def truncated(snap):
        return [f for f in rule_outputs_truncated(ctx(snap))]

    first, later = state.snapshot(SIM_T0), state.snapshot(SIM_T0 + 1)
    assert later.partitions[0].quality is first.partitions[0].quality
    (a,) = truncated(first)
    (b,) = truncated(later)
    assert b is a and "(from the records)" in a.evidence
    state.client.set_processes((ProcessInfo(7, "python", "python run_inference.py "
                                            "--max-tokens 10240", None),))
    (c,) = truncated(state.snapshot(SIM_T0 + 2))
    assert c == next(rule_outputs_truncated(_ctx(state.snapshot(SIM_T0 + 2))))
    assert "--max-tokens 10240 on the client's command line" in c.evidence
    write(tmp_path / "B2.jsonl", [sglang(i, finish="stop") for i in range(60)])
    collector = Collector(state.cfg)
    try:
        apply_files(state, collector.read_files(), SIM_T0 + 3)
    finally:
        collector.close()
    assert truncated(state.snapshot(SIM_T0 + 3)) == []  # new figures: the rule runs again
