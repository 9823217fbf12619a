"""`kdash summary` says when each alert it replays was over: a report read after the run has
to tell an OOM the server restarted from an hour ago from one it died of at the end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dash.commands.cli import main
from dash.commands.summary import render_text, summarize

STATS = ("[2026-06-01 12:{m:02d}:{s:02d} TP0] Decode batch. #running-req: 8, #token: 900, "
         "token usage: 0.10, gen throughput (token/s): 300.00, #queue-req: 0, \n")


def _flat(text: str) -> str:
    """The report with its wrapped lines joined."""
    return " ".join(text.split())


def _log(tmp_path: Path, restart: bool) -> Path:
    lines = [STATS.format(m=0, s=s) for s in range(0, 60, 5)]
    lines.append("[2026-06-01 12:01:00 TP0] torch.OutOfMemoryError: CUDA out of memory. "
                 "Tried to allocate 1.73 GiB.\n")
    if restart:
        lines.append("[2026-06-01 12:03:00] server_args=ServerArgs(model_path='m', "
                     "mem_fraction_static=0.88, port=30000)\n")
        lines.append("[2026-06-01 12:03:30] The server is fired up and ready to roll!\n")
        lines += [STATS.format(m=m, s=s) for m in (4, 5) for s in range(0, 60, 5)]
    path = tmp_path / "server.log"
    path.write_text("".join(lines))
    return path


def test_an_alert_over_before_the_log_ends_says_until_when(tmp_path: Path) -> None:
    doc = summarize(_log(tmp_path, restart=True))
    oom = next(a for a in doc["alerts"] if a["id"] == "server_oom")
    assert oom["until"] is not None and oom["until"] > oom["since"]
    assert "CUDA out of memory in the server (12:01:00 -> 12:03:" in _flat(render_text(doc, 100))


def test_an_alert_still_active_at_the_end_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _log(tmp_path, restart=False)
    assert main(["summary", "--json", str(path)]) == 0
    oom = next(a for a in json.loads(capsys.readouterr().out)["alerts"] if a["id"] == "server_oom")
    assert oom["until"] is None
    assert "(since 12:01:00, to the end of the log)" in _flat(render_text(summarize(path), 100))


def test_a_report_over_days_dates_its_alerts(real_logs: Path) -> None:
    doc = summarize(real_logs / "sglang-grok2-blog-v052rc2-tp8-startup-to-decode.log")
    (silent,) = doc["alerts"]
    assert silent["until"] is not None
    assert "(2025-09-11 10:26:22 -> 2025-09-12 07:" in _flat(render_text(doc, 100))


def test_a_log_without_stamps_gives_its_alerts_no_invented_times(real_logs: Path) -> None:
    """sglang#4547 prints no stamp: the OOM's `since` was 0.0 (1970, `since 00:00:00` in the
    text), where the log says nothing of when; its evidence names the line."""
    doc = summarize(real_logs / "sglang-4547-cuda-error-oom-overlap-thread-traceback.log")
    (oom,) = [a for a in doc["alerts"] if a["id"] == "server_oom"]
    assert oom["since"] is None and oom["until"] is None and "line 14" in oom["evidence"]
    assert "00:00:00" not in render_text(doc)
