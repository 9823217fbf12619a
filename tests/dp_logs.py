"""Server logs with data-parallel ranks whose every value is known, for the DP tests.

Written from this module's own format strings (SGLang 0.5's `Decode batch` line with a
`DP{d} TP{d} EP{d}` tag), never through kdash: the tests compare what kdash makes of them with
the numbers chosen here. Stamps are the box's local time at the chosen epoch seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

DECODE = ("Decode batch, #running-req: {r}, #token: {tok}, token usage: {u:.2f}, cuda graph: True, "
          "gen throughput (token/s): {g:.2f}, #queue-req: {q}")
PD_DECODE = ("Decode batch, #running-req: {r}, #token: {tok}, token usage: {u:.2f}, "
             "pre-allocated usage: 0.00, #prealloc-req: {pre}, #transfer-req: {tr}, "
             "#retracted-req: 0, cuda graph: True, gen throughput (token/s): {g:.2f}, "
             "#queue-req: {q}")
PD_PREFILL = ("Prefill batch, #new-seq: {n}, #new-token: {new}, #cached-token: {cached}, "
              "token usage: {u:.2f}, #running-req: {r}, #queue-req: {q}, #bootstrap-req: 0, "
              "#inflight-req: {inflight}, input throughput (token/s): {tps:.2f}")
CAPACITY = ("max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            "max_running_requests=1024, context_len=163840, available_gpu_mem=5.21 GB")
POOL = 300_000
"""max_total_num_tokens of each rank's KV pool."""


def stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


@dataclass(frozen=True, slots=True)
class RankLine:
    dp: int
    t: float
    gen: float
    running: int
    queue: int
    usage: float


@dataclass(frozen=True, slots=True)
class DpLog:
    """What a DP log holds: each rank's lines, in the order written."""

    lines: tuple[RankLine, ...]
    ranks: int
    interval_s: float
    peak_until_s: float
    start: float

    def last(self) -> dict[int, RankLine]:
        out: dict[int, RankLine] = {}
        for rl in self.lines:
            out[rl.dp] = rl
        return out

    @property
    def end(self) -> float:
        return self.lines[-1].t


def _weight(d: int, ranks: int) -> float:
    """Each rank's share of the throughput: spread +-5 % around 1, summing to `ranks`."""
    return 1.0 + 0.05 * (d - (ranks - 1) / 2) / ((ranks - 1) / 2 or 1)


def dp_values(ranks: int = 8, minutes: float = 15, interval_s: float = 4.0, start: float = 0.0,
              peak_until_s: float = 120.0, peak: float = 1400.0,
              plateau: float = 600.0) -> DpLog:
    """`ranks` ranks, one decode line each every `interval_s`: the server's total throughput is
    `peak` until `peak_until_s`, then `plateau`; the KV caches fill (0.88-0.95, the highest rank
    last) and the queue grows after the peak."""
    lines = []
    steps = int(minutes * 60 / interval_s)
    for k in range(steps):
        t = start + k * interval_s
        after = k * interval_s >= peak_until_s
        total = plateau if after else peak
        for d in range(ranks):
            lines.append(RankLine(
                dp=d, t=t, gen=total / ranks * _weight(d, ranks), running=16 + d % 3,
                queue=(2 + d % 2 + k // 15) if after else 0,
                usage=(0.88 + 0.01 * d) if after else 0.5))
    return DpLog(tuple(lines), ranks, interval_s, peak_until_s, start)


def decode_line(rl: RankLine, tag: bool = True) -> str:
    prefix = f"[{stamp(rl.t)} DP{rl.dp} TP{rl.dp} EP{rl.dp}] " if tag else f"[{stamp(rl.t)} TP0] "
    return prefix + DECODE.format(r=rl.running, tok=int(rl.usage * POOL), u=rl.usage, g=rl.gen,
                                  q=rl.queue) + "\n"


def write_dp_log(path: Path, log: DpLog) -> None:
    """The log's startup capacity line, then every rank's decode lines."""
    head = [f"[{stamp(log.start - 5)} DP{d} TP{d} EP{d}] " + CAPACITY.format(tokens=POOL) + "\n"
            for d in range(log.ranks)]
    path.write_text("".join(head) + "".join(decode_line(rl) for rl in log.lines))


def write_single_rank_log(path: Path, log: DpLog) -> None:
    """The same server as one rank: each interval one `TP0` line with the totals."""
    out = [f"[{stamp(log.start - 5)} TP0] " + CAPACITY.format(tokens=POOL * log.ranks) + "\n"]
    by_t: dict[float, list[RankLine]] = {}
    for rl in log.lines:
        by_t.setdefault(rl.t, []).append(rl)
    for t, group in by_t.items():
        total = RankLine(0, t, sum(r.gen for r in group), sum(r.running for r in group),
                         sum(r.queue for r in group), max(r.usage for r in group))
        out.append(decode_line(total, tag=False))
    path.write_text("".join(out))


def write_pd_logs(prefill: Path, decode: Path, start: float, seconds: int = 120) -> None:
    """A PD pair: the prefill server's Prefill lines, the decode server's Decode lines
    (with `#prealloc-req` and `#transfer-req`), every 2 s."""
    p_lines, d_lines = [], []
    for k in range(seconds // 2):
        t = start + 2 * k
        p_lines.append(f"[{stamp(t)}] " + PD_PREFILL.format(
            n=4, new=6000, cached=2000, u=0.12, r=0, q=k % 3, inflight=2, tps=12000.0) + "\n")
        d_lines.append(f"[{stamp(t)}] " + PD_DECODE.format(
            r=48, tok=int(0.4 * POOL), u=0.4, pre=3, tr=1, g=2100.0 + k % 5, q=0) + "\n")
    prefill.write_text("".join(p_lines))
    decode.write_text("".join(d_lines))
