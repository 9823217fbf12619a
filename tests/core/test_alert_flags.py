"""Fixes speak the flags of the engine that printed the log: every rule takes them from
dash.core.alerts.flags, so a vLLM user is never told to pass an SGLang flag."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import dash.core.alerts as alerts_pkg
from dash.core.alerts.flags import SGLANG, VLLM, EngineFlags, flags_for
from dash.core.alerts.incidents import _restart_hint


def _flag_names(flags: EngineFlags) -> set[str]:
    names = set()
    for f in dataclasses.fields(flags):
        value = getattr(flags, f.name)
        names |= {w for w in value.replace("/", " ").split() if w.startswith("--")}
    return names


def test_no_rule_writes_an_engine_flag_of_its_own() -> None:
    flags = _flag_names(SGLANG) | _flag_names(VLLM)
    folder = Path(alerts_pkg.__file__).parent
    for path in folder.glob("*.py"):
        if path.name == "flags.py":
            continue
        text = path.read_text(encoding="utf-8")
        assert not [f for f in flags if f in text], path.name


@pytest.mark.parametrize(("engine", "expected"), [("sglang", SGLANG), ("vllm", VLLM),
                                                  (None, SGLANG), ("other", SGLANG)])
def test_the_engine_picks_its_flags(engine: str | None, expected: EngineFlags) -> None:
    assert flags_for(engine) is expected


def test_a_vllm_restart_after_an_oom_names_vllm_flags() -> None:
    hint = _restart_hint({"event": "oom", "engine": "vllm"}, {"gpu_memory_utilization": 0.9})
    assert "--gpu-memory-utilization further (now 0.9)" in hint
    assert "--max-num-batched-tokens" in hint and "--mem-fraction-static" not in hint
    sglang = _restart_hint({"event": "oom", "engine": "sglang"}, {"mem_fraction_static": 0.93})
    assert "--mem-fraction-static further (now 0.93)" in sglang
