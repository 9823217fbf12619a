"""`kdash --once --json`, the Prometheus scrape and `kdash outputs` say the same about the same
files, and the scrape with the quality families passes promtool's checks."""

from __future__ import annotations

import json
from pathlib import Path

from exposition_lint import lint, promtool_problems
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from dash.commands.once import collect_once
from dash.commands.outputs import run_outputs
from dash.core.config import Config
from dash.core.views.jsondoc import snapshot_to_json
from dash.sources.prom_export import build_registry


def _files(tmp_path: Path) -> Config:
    for name, n, every in (("B1", 120, 5), ("B2", 250, 3)):
        lines = []
        for i in range(n):
            cut = i % every == 0
            lines.append(json.dumps({
                "id": i, "text": f"<think>\nx\n</think>\n\nanswer {i}" if i % 7 else "",
                "meta_info": {"finish_reason": {"type": "length", "length": 4096} if cut
                              else {"type": "stop", "matched": 2},
                              "completion_tokens": 4096 if cut else 100 + 13 * i,
                              "prompt_tokens": 800 + i}}))
        lines.insert(40, '{"id": "crashed')
        (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    return Config(outputs=(str(tmp_path / "*.jsonl"),), url="")


def test_once_prometheus_and_outputs_agree(tmp_path: Path, capsys) -> None:
    cfg = _files(tmp_path)
    snap, _ = collect_once(cfg, window=0.5)
    once = {p["name"]: p["quality"] for p in snapshot_to_json(snap)["partitions"]}
    run_outputs(cfg, as_json=True)
    outputs = {f["name"]: f["quality"] for f in json.loads(capsys.readouterr().out)["files"]}
    text = generate_latest(build_registry(lambda: snap, frozenset({"outputs"}))).decode()
    prom: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            prom[(s.name, tuple(sorted(s.labels.items())))] = s.value
    for name in ("B1", "B2"):
        a, b = once[name], outputs[name]
        for key in ("lines", "samples", "invalid_lines", "finish", "truncated", "output_tokens",
                    "prompt_tokens", "reasoning", "empty", "errors"):
            assert a["total"][key] == b["total"][key], (name, key)
            assert a["window"][key] == b["window"][key], (name, key)
        lab = (("partition", name),)
        assert prom[("kdash_partition_truncated_ratio", lab)] == a["window"]["truncated_ratio"]
        assert prom[("kdash_partition_invalid_lines_total", lab)] == a["total"]["invalid_lines"] == 1
        assert prom[("kdash_partition_output_tokens", (("partition", name), ("quantile", "0.5")))] \
            == a["window"]["output_tokens"]["median"]
        assert prom[("kdash_partition_output_tokens_count", lab)] == a["total"]["output_tokens"]["n"]
        assert prom[("kdash_partition_output_tokens_sum", lab)] == a["total"]["output_tokens"]["sum"]
    assert once["B2"]["total"]["truncated"] == 84 and once["B2"]["total"]["lines"] == 251
    assert lint(text) == []
    checked = promtool_problems(text)
    assert checked is None or checked[0] == 0, checked


def test_outputs_raises_the_alerts_once_and_check_raise(tmp_path: Path, capsys) -> None:
    """A file healthy for long and truncating at its end: its recent samples fire
    `outputs_truncated` and `outputs_empty` everywhere, though the whole file's shares are low;
    the text shows the recent shares the alerts judge, then the whole file's."""
    records = []
    for i in range(1800):
        cut = i >= 1600 and i % 3 == 0
        records.append(json.dumps({
            "id": i, "text": "<think>\nstill thinking" if cut else f"<think>\nx\n</think>\n\na {i}",
            "meta_info": {"finish_reason": {"type": "length", "length": 10240} if cut
                          else {"type": "stop", "matched": 2},
                          "completion_tokens": 10240 if cut else 160}}))
    (tmp_path / "B2.jsonl").write_text("\n".join(records) + "\n")
    cfg = Config(outputs=(str(tmp_path / "*.jsonl"),), url="")
    snap, _ = collect_once(cfg, window=0.5)
    once = {(a.id, a.message) for a in snap.alerts if a.id.startswith("outputs")}
    assert {i for i, _ in once} == {"outputs_truncated", "outputs_empty"}
    run_outputs(cfg, as_json=True)
    doc = json.loads(capsys.readouterr().out)
    assert {(a["id"], a["message"]) for a in doc["alerts"]} == once
    run_outputs(cfg, as_json=False)
    text = capsys.readouterr().out
    assert "alerts      none" not in text
    assert "recent: samples 200  finish stop 134 (67.0%) · length 66 (33.0%)" in text
    assert "whole file: samples 1,800  finish stop 1,734 (96.3%) · length 66 (3.7%)" in text
    assert "ALERT warn outputs_truncated [B2]: B2: 66 of 200 recent samples (33%)" in text
