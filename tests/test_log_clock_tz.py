"""A server stamping UTC, read on a box in Tokyo and on one in Los Angeles (TZ in a child
process): no false silence, every age right within a few seconds, and the difference said."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

REPO = Path(__file__).resolve().parent.parent
LINE = ("[{ts} TP0] Decode batch, #running-req: 12, #token: 9000, token usage: 0.30, "
        "cuda graph: True, gen throughput (token/s): 640.00, #queue-req: 0\n")
ZONES = ["Asia/Tokyo", "America/Los_Angeles"]
FORMATS = {"dated": "%Y-%m-%d %H:%M:%S", "time-only": "%H:%M:%S"}


def _utc(t: float, fmt: str) -> str:
    return time.strftime(fmt, time.gmtime(t))


def _box_offset(zone: str) -> float:
    off = datetime.now(ZoneInfo(zone)).utcoffset()
    assert off is not None
    return off.total_seconds()


def _env(zone: str) -> dict[str, str]:
    return {**os.environ, "TZ": zone, "PYTHONPATH": str(REPO)}


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("zone", ZONES)
def test_once_on_a_utc_log(tmp_path: Path, zone: str, fmt: str) -> None:
    log = tmp_path / "server.log"
    now = time.time()
    log.write_text("".join(LINE.format(ts=_utc(now - 600 + 2 * k, FORMATS[fmt]))
                           for k in range(301)))
    out = subprocess.run([sys.executable, "-m", "dash", "--once", "--json", "--window", "0",
                          "--log", str(log), "--url", ""], capture_output=True, text=True, timeout=60,
                         env=_env(zone))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    server, box = doc["server"], _box_offset(zone)
    clock = server["log_clock"]
    assert clock["offset_s"] == box and clock["box_utc_offset_s"] == box
    assert clock["log_utc_offset_s"] == 0.0
    assert clock["text"] == f"log clock UTC+0, box UTC{box / 3600:+.0f}"
    assert clock["last_line_age_s"] < 5.0
    assert abs(server["last_record_at"] - now) < 5.0
    assert abs(server["now"]["at"] - now) < 5.0
    assert not [a for a in doc["alerts"] if a["id"] == "server_silent"]


@pytest.mark.parametrize("zone", ZONES)
def test_stamps_that_name_their_zone_need_no_guess(tmp_path: Path, zone: str) -> None:
    """`docker logs --timestamps` / kubectl: an RFC 3339 stamp in UTC before SGLang's own."""
    log = tmp_path / "server.log"
    now = time.time()
    log.write_text("".join(
        _utc(t, "%Y-%m-%dT%H:%M:%S.123456789Z ") + LINE.format(ts=_utc(t, FORMATS["dated"]))
        for t in (now - 600 + 2 * k for k in range(301))))
    out = subprocess.run([sys.executable, "-m", "dash", "--once", "--json", "--window", "0",
                          "--log", str(log), "--url", ""], capture_output=True, text=True, timeout=60,
                         env=_env(zone))
    assert out.returncode == 0, out.stderr
    server = json.loads(out.stdout)["server"]
    clock = server["log_clock"]
    assert clock["zoned"] and clock["offset_s"] == 0.0 and clock["text"] is None
    assert clock["last_line_age_s"] < 5.0 and abs(server["last_record_at"] - now) < 5.0


_LIVE = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from dash.core.config import Config
    from dash.core.state.run import RunState
    from dash.sources.collector import Collector, apply_files

    log = Path(sys.argv[1])
    line = sys.argv[2]
    stamp = lambda t: time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
    log.write_text("".join(line.format(ts=stamp(time.time() - 3600 + 10 * k)) for k in range(300)))
    cfg = Config(log=log, url="", alert_history=False)
    state, col = RunState(cfg), Collector(cfg)
    apply_files(state, col.read_files(), time.time())  # the backfill: an hour of history
    ages = []
    for _ in range(12):  # lines arrive at 4/s for three seconds
        with log.open("a") as fh:
            fh.write(line.format(ts=stamp(time.time())))
        time.sleep(0.25)
        apply_files(state, col.read_files(), time.time())
        now = time.time()
        state.tick(now)
        snap = state.snapshot(now)
        ages.append(now - snap.server.last_record_at)
    snap = state.snapshot(time.time())
    col.close()
    print(json.dumps({"ages": ages, "offset": snap.server.clock.offset_s,
                      "first": snap.server.gen_throughput.t[0], "now": time.time(),
                      "alerts": [a.id for a in snap.alerts]}))
""")


@pytest.mark.parametrize("zone", ZONES)
def test_following_a_utc_log_live(tmp_path: Path, zone: str) -> None:
    out = subprocess.run([sys.executable, "-c", _LIVE, str(tmp_path / "server.log"), LINE],
                         capture_output=True, text=True, timeout=60, env=_env(zone))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["offset"] == _box_offset(zone)
    assert max(got["ages"]) < 3.0  # each new line reads as seconds old, not hours
    assert abs(got["first"] - (got["now"] - 3600)) < 10.0  # the history sits an hour back
    assert "server_silent" not in got["alerts"]


ACCESS = '[{ts}] INFO:     127.0.0.1:51234 - "GET /health HTTP/1.1" 200 OK\n'


@pytest.mark.parametrize("zone", ZONES)
def test_an_idle_server_behind_health_checks_is_an_hour_quiet(tmp_path: Path, zone: str) -> None:
    """The last stats line is an hour old; health checks wrote access lines since. Their stamps
    teach the clock, and the stats line reads an hour old (a silence), not fresh."""
    log = tmp_path / "server.log"
    now = time.time()
    fmt = FORMATS["dated"]
    log.write_text(LINE.format(ts=_utc(now - 3600, fmt)) + "".join(
        ACCESS.format(ts=_utc(now - 3600 + 5 * k, fmt)) for k in range(1, 721)))
    out = subprocess.run([sys.executable, "-m", "dash", "--once", "--json", "--window", "0",
                          "--log", str(log), "--url", ""], capture_output=True, text=True, timeout=60,
                         env=_env(zone))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    server = doc["server"]
    assert server["log_clock"]["offset_s"] == _box_offset(zone)
    assert abs(server["last_record_at"] - (now - 3600)) < 10.0
    assert server["log_clock"]["last_line_age_s"] < 10.0  # the last line: an access line, fresh
    assert [a for a in doc["alerts"] if a["id"] == "server_silent"]
