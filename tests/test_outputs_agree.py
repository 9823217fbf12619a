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
