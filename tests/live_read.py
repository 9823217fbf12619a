"""A log read once by the live dashboard's own pieces (its collector, parser and run state), for
tests that check what the dashboard would show of it."""

from __future__ import annotations

from pathlib import Path

from dash.core.config import Config
from dash.core.log.grammar import GRAMMAR
from dash.core.log.parser import LineParser
from dash.core.log.syntax import Grammar
from dash.core.snapshot import ServerLogSnapshot
from dash.core.state.run import RunState
from dash.sources.collector import Collector, apply_files

NOW = 1_772_352_000.0


def live_server(path: Path, grammar: Grammar = GRAMMAR) -> ServerLogSnapshot:
    """The server as the dashboard sees it after one read of `path` with `grammar`."""
    cfg = Config(log=path)
    collector = Collector(cfg, parser=LineParser(grammar))
    state = RunState(cfg)
    apply_files(state, collector.read_files(), NOW)
    return state.snapshot(NOW).server
