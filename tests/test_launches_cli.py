"""`kdash launches` and `summary`'s launches on logs of several starts, split and appended."""

from __future__ import annotations

import json
from pathlib import Path

from core.test_launches import args_line, serving, startup, two_starts

from dash.commands.cli import main
from dash.commands.launches import launches_of
from dash.commands.summary import render_text, summarize
from dash.core.views.launch_advice import launches_json
from dash.core.views.launch_table import table


def _logs(tmp_path: Path) -> tuple[list[Path], Path]:
    lines = two_starts()
    cut = lines.index(args_line(300, 0.88))
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("\n".join(lines[:cut]) + "\n")
    b.write_text("\n".join(lines[cut:]) + "\n")
    both = tmp_path / "both.log"
    both.write_text(a.read_text() + b.read_text())
    return [a, b], both


def test_split_and_appended_logs_give_the_same_launches(tmp_path: Path) -> None:
    split, both = _logs(tmp_path)
    apart, together = launches_of(split), launches_of([both])
    assert [r for r in table(apart) if r.label != "log"] == table(together)
    assert [x.source for x in apart] == [str(p) for p in split]
    # given in the other order, still in start order
    assert [x.key for x in launches_of(split[::-1])] == [x.key for x in apart]


def test_a_log_named_twice_counts_its_starts_once(tmp_path: Path) -> None:
    _, both = _logs(tmp_path)
    assert len(launches_of([both, both])) == 2


def test_summary_lists_the_launches_of_its_log(tmp_path: Path) -> None:
    _, both = _logs(tmp_path)
    doc = summarize(both)
    first, second = doc["launches"]
    assert first["outcome"] == "oom" and first["capacity"]["graph_avail_gb"] == 0.82
    assert second["changed"] == {"mem": ["0.93", "0.88"]}
    # its stream is thinned: no throughput or line counts that would be a sample's, not the log's
    assert first["figures"] is None and second["figures"] is None
    assert "steady" not in second["advice"] and "tok/s" not in second["advice"]
    exact = launches_json(launches_of([both]))
    assert exact[1]["figures"]["decode_lines"] > 0 and exact[1]["figures"]["peak_line"]
    text = render_text(doc)
    assert "launches    2 (kdash launches LOG: side by side, with throughput)" in text
    # read from the alert replay's stream: decode lines thinned, no prefill lines
    assert "OOM 4m12s in, ran 4m12s" in text and "died of OOM 4 min in" in text


def test_a_log_of_one_start_lists_no_launch_section(tmp_path: Path) -> None:
    log = tmp_path / "one.log"
    log.write_text("\n".join([args_line(0, 0.9), *startup(0, 1000, 4.0), *serving(10, 60, 80)]))
    assert "launches" not in render_text(summarize(log)).split("alerts")[0].split("events")[0]


def test_cli_text_json_and_errors(tmp_path: Path, capsys) -> None:
    split, both = _logs(tmp_path)
    assert main(["launches", str(both)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("2 launches in 1 log\n") and "*0.88" in text
    assert main(["launches", "--json", *map(str, split)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [d["number"] for d in doc["launches"]] == [1, 2]
    assert main(["launches"]) == 2
    assert "the following arguments are required: LOG" in capsys.readouterr().err
    assert main(["launches", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"kdash: {tmp_path}: is a directory"
