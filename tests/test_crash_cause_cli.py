"""The crash's cause on a real crash tail (sgl-project/sglang#9780: an AttributeError, then
SIGQUIT from the children and `Killed`), through every headless command that shares the rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dash.commands.cli import main

LOG = "sglang-9780-crash-tail-sigquit-killed.log"
CAUSE = "AttributeError: module 'sglang.srt.layers.quantization.deep_gemm_wrapper'"


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.chdir(tmp_path)


def _out(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(args)
    return rc, capsys.readouterr().out


def test_summary_names_and_quotes_the_exception(real_logs: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _out(["summary", str(real_logs / LOG)], capsys)
    words = " ".join(out.split())  # the text wraps at the terminal's width
    assert rc == 0 and "server crashed: AttributeError; a server process failed" in words
    assert "AttributeError: module" in words  # the alert's line (cut to the width), not `Received sigquit`
    rc, out = _out(["summary", "--json", str(real_logs / LOG)], capsys)
    [crash] = [a for a in json.loads(out)["alerts"] if a["id"] == "server_crash"]
    assert crash["line"].startswith(CAUSE) and f"`{CAUSE}" in crash["evidence"]


def test_check_and_once_name_the_exception_and_its_fix(real_logs: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _out(["check", "--log", str(real_logs / LOG), "--no-http", "--window", "0"], capsys)
    assert rc == 2
    assert "CRIT server_crash: server crashed: AttributeError;" in out
    assert "hint: Fix the AttributeError (line 1)" in out and "`Killed` alone" not in out
    rc, out = _out(["--once", "--log", str(real_logs / LOG), "--no-http", "--json"], capsys)
    [crash] = [a for a in json.loads(out)["alerts"] if a["id"] == "server_crash"]
    assert crash["message"] == ("server crashed: AttributeError; a server process failed "
                                "(SIGQUIT); the server was killed")
    assert crash["hint"].startswith("Fix the AttributeError (line 1)")
    assert "OOM killer" not in crash["message"] and "`Killed` alone" not in crash["hint"]
