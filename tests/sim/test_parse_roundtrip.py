"""Everything the simulator writes parses with kdash's own parser, with nothing unparsed."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from dash.sim.formats import FAMILIES
from dash.sim.scenarios import NAMES


@pytest.mark.parametrize("log_format", FAMILIES)
@pytest.mark.parametrize("scenario", NAMES)
def test_server_log_parses_with_zero_unparsed(make_run, parse_log, scenario, log_format):
    run = make_run(scenario, log_format=log_format)
    lives = run.scenario.lives
    # A scenario whose starts rewrite the log: read the last start's file, 10 min in.
    until = 700.0 if not any(life.rewrite for life in lives) else lives[-1].start + 600
    run.advance_to(until)
    in_file = [life for life in lives if life.start <= until]
    while any(life.rewrite for life in in_file[1:]):
        in_file = in_file[1:]
    records = parse_log(run.server_log)
    kinds = Counter(r["kind"] for r in records)
    unparsed = [r for r in records if r["kind"] == "unparsed"]
    assert not unparsed, unparsed[:3]
    assert kinds["decode"] > 100 and kinds["prefill"] > 100
    events = Counter(r["event"] for r in records if r["kind"] == "event")
    assert events["ready"] == len(in_file)
    assert events["server_args"] == len(in_file)
    assert events["kv_cache"] >= 1 and events["cuda_graph"] >= 1 and events["load_weights"] >= 1
    if scenario == "oom-crash-restart":
        assert events["oom"] >= 1
    if scenario == "kv-saturation":
        assert events["retract"] == 4


@pytest.mark.parametrize("scenario", NAMES)
def test_client_log_and_outputs_parse(make_run, scenario):
    from dash.core.log.parse import parse_line

    run = make_run(scenario)
    run.advance_to(700)
    text = run.client_log.read_text(encoding="utf-8")
    pieces = [p for p in text.replace("\r", "\n").split("\n") if p]
    assert all((parse_line(p) or {}).get("kind") != "unparsed" for p in pieces)
    from dash.core.samples.fields import Extractor

    extract = Extractor().samples
    for path in run.outputs_dir.glob("*.jsonl"):
        raw = path.read_bytes()
        assert raw.endswith(b"\n")  # only whole lines are ever appended
        for line in raw.decode().splitlines():
            doc = json.loads(line)
            # SGLang /generate results under the client's id, read as such by the detector.
            assert {"id", "partition", "text", "meta_info"} <= doc.keys()
            (sample,) = extract(doc)
            assert sample.shape == "sglang" and sample.finish in ("stop", "length")
            assert sample.tokens == doc["meta_info"]["completion_tokens"]
            if sample.finish == "length":
                assert sample.limit == sample.tokens
