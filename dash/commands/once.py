"""`kdash --once [--json]`: sample every configured source for a short window, print, exit.

One read of everything cannot say what the dashboard says: a partition's rate needs two counts,
"server down" needs several failed polls, "running" needs a write. So the sources are sampled for
`--window` seconds (5 by default): files every half second, HTTP `down_polls` times spread over
the window, GPUs and processes at both ends. Alerts fire as soon as their condition holds (the
window is too short for their durations), and "down" counts the polls made. `--window 0` is one
instant read: rates are unknown and said to be. The first counts of large output files are
waited for, so the numbers printed are complete.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from dash.commands.options import DEFAULT_WINDOW_S
from dash.core.clock import Clock, SystemClock
from dash.core.config import Config
from dash.core.snapshot import RunSnapshot
from dash.core.views.jsondoc import snapshot_to_json
from dash.sources.collector import Collector, apply_files, apply_gpus, apply_http, apply_processes
from dash.sources.launch_store import remembered

if TYPE_CHECKING:
    from dash.core.state.run import RunState

READ_EVERY_S = 0.5


@dataclass(frozen=True, slots=True)
class Sample:
    """How a snapshot was taken: the window asked for, how long it took, the HTTP polls."""

    window_s: float
    sampled_s: float
    http_polls: int

    @property
    def rates_known(self) -> bool:
        return self.window_s > 0

    def to_json(self) -> dict[str, object]:
        return {"window_s": self.window_s, "sampled_s": round(self.sampled_s, 2),
                "http_polls": self.http_polls,
                "rates": "measured" if self.rates_known else "unknown"}

    def text(self) -> str:
        if not self.rates_known:
            return "instant snapshot of --window 0: rates unknown"
        polls = f", {self.http_polls} HTTP polls" if self.http_polls else ""
        return f"sampled {self.sampled_s:.1f} s{polls}"


class _Sampler:
    """One Collector and one RunState, sampled on a schedule over the window."""

    def __init__(self, cfg: Config, window: float, nvml_module: object | None,
                 clock: Clock) -> None:
        from dash.core.state.run import RunState

        self.window = window
        self.polls_planned = 0 if not cfg.http_enabled else (
            1 if window == 0 else max(1, _alerts_down_polls(cfg)))
        # "Down" is judged on the polls this window makes (all of them failed), not more; so
        # is a route's error answer (every poll of the window got it).
        polls = max(1, self.polls_planned)
        alerts = {**cfg.alerts, "down_polls": polls, "http_error_polls": polls}
        self.cfg = dataclasses.replace(cfg, alerts=alerts)
        self.clock = clock
        self.collector = Collector(self.cfg, nvml_module=nvml_module)
        self.state: RunState = RunState(self.cfg, sample_s=window)
        self.polls = 0

    def read_files(self) -> None:
        read = self.collector.read_files()
        apply_files(self.state, read, self.clock.now())
        while read.more or read.counting:
            self.collector.wait_counts()
            read = self.collector.read_files()
            apply_files(self.state, read, self.clock.now())

    def read_slow(self) -> None:
        apply_processes(self.state, self.collector.sample_processes(), self.clock.now())
        apply_gpus(self.state, self.collector.sample_gpus(), self.clock.now())

    async def poll_http(self) -> None:
        sample = await self.collector.poll_http()
        if sample is not None:
            self.polls += 1
        apply_http(self.state, sample, self.clock.now())

    async def run(self) -> Sample:
        start = time.monotonic()
        self.read_files()
        self.read_slow()
        await self.poll_http()
        gap = self.window / (self.polls_planned - 1) if self.polls_planned > 1 else None
        next_poll = start + gap if gap is not None else float("inf")
        end = start + self.window
        while (left := end - time.monotonic()) > 0:
            await asyncio.sleep(min(READ_EVERY_S, left, max(0.0, next_poll - time.monotonic())))
            self.read_files()
            if time.monotonic() >= next_poll - 0.01 and gap is not None:
                await self.poll_http()
                next_poll += gap
        for _ in range(self.polls_planned - self.polls):
            await self.poll_http()  # the last one, at the window's end
        if self.window > 0:
            self.read_slow()
        return Sample(self.window, time.monotonic() - start, self.polls)

    async def close(self) -> None:
        await self.collector.aclose()


def _alerts_down_polls(cfg: Config) -> int:
    from dash.core.config import AlertConfig

    return AlertConfig.from_mapping(cfg.alerts).down_polls


def collect_once(cfg: Config, *, window: float = DEFAULT_WINDOW_S,
                 nvml_module: object | None = None,
                 clock: Clock | None = None) -> tuple[RunSnapshot, Sample]:
    """The run's state after sampling every source for `window` seconds, and how it was taken."""
    sampler = _Sampler(cfg, window, nvml_module, clock or SystemClock())
    keepers = remembered(sampler.state, cfg)

    async def main() -> Sample:
        try:
            return await sampler.run()
        finally:
            await sampler.close()

    sample = asyncio.run(main())
    now = sampler.clock.now()
    snap = sampler.state.tick_and_snapshot(now)[1]
    errors = [keeper.store.save(sampler.state.launches_for(keeper.path).launches(), now)
              for keeper in keepers]  # what this look saw, for the next one
    for error in filter(None, errors):
        sampler.state.add_notice(error)
    if any(errors):
        snap = sampler.state.snapshot(now)
    return snap, sample


def terminal_columns(out: TextIO) -> int | None:
    """The width of the terminal `out` writes to (COLUMNS first, as shells set it), at least
    40; None when it is not a terminal: a pipe or a file gets each line whole."""
    try:
        if not out.isatty():
            return None
    except (AttributeError, ValueError):  # a closed or odd stream
        return None
    return max(40, shutil.get_terminal_size().columns)


def run_once(cfg: Config, as_json: bool, *, window: float = DEFAULT_WINDOW_S,
             nvml_module: object | None = None, out: TextIO | None = None) -> int:
    """Print the state once; 0 on success (a bad glob raises ConfigError: exit 2 in the CLI)."""
    from dash.commands.once_text import render_text

    out = out or sys.stdout
    snap, sample = collect_once(cfg, window=window, nvml_module=nvml_module)
    if as_json:
        doc = snapshot_to_json(snap)
        doc["sample"] = sample.to_json()
        json.dump(doc, out, indent=2, sort_keys=False)
        out.write("\n")
    else:
        out.write(render_text(snap, sample.text(), terminal_columns(out)))
    out.flush()
    return 0
