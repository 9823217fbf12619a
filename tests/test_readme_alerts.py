"""The README's alert tables name every rule id and every threshold (scripts and configs are
written from them)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from dash.core.alerts.model import RULE_IDS
from dash.core.config import AlertConfig

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_rule_id_has_a_row_in_the_alerts_table() -> None:
    rows = re.findall(r"^\| (`[a-z_]+`(?: / `[a-z_]+`)*) \|", README, flags=re.M)
    named = {i for row in rows for i in re.findall(r"`([a-z_]+)`", row)}
    assert [i for i in RULE_IDS if i not in named] == []


def test_every_threshold_has_a_row_with_its_default() -> None:
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| ([0-9.]+) \|", README, flags=re.M))
    for f in dataclasses.fields(AlertConfig):
        assert f.name in rows and float(rows[f.name]) == f.default, f.name
