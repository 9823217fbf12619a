"""Data-parallel ranks as one server: each rank's latest line, sums, the highest usage, drop-out."""

from __future__ import annotations

from typing import Any

import pytest

from dash.core.state.ranks import MIN_DROP_S, RankTable, rank_key
from dash.core.state.server_log import ServerLogTracker

T0 = 1_780_000_000.0


def _dec(rank: str | None, t: float, gen: float, running: int = 10, queue: int = 0,
         usage: float = 0.5, **kw: Any) -> dict[str, Any]:
    return {"kind": "decode", "line": 1, "ts": None, "rank": rank, "engine": "sglang",
            "running_req": running, "queue_req": queue, "tokens": running * 900,
            "token_usage": usage, "gen_throughput": gen, "_t": t, **kw}


@pytest.mark.parametrize(("rec", "key"), [
    ({"rank": "DP3 TP3 EP3"}, "DP3"),
    ({"rank": "DP15 TP15 EP15"}, "DP15"),
    ({"rank": "DP1 TP2"}, "DP1"),
    ({"rank": "DP0 PP0 ATTN_CP0 MOE_DP2 TP0 EP0"}, "DP0"),
    ({"rank": "MOE_DP2 TP0"}, None),  # MoE data parallel is not a DP rank
    ({"rank": "Worker_DP1_TP0_EP1"}, "DP1"),
    ({"rank": "EngineCore_DP02"}, "DP2"),
    ({"rank": "TP0"}, None),
    ({"rank": "TP8 EP8"}, None),
    ({"rank": None}, None),
    ({"rank": None, "engine_index": 3}, "engine 3"),
    ({"rank": "DP1 TP0", "engine_index": 0}, "engine 0"),
    ({"rank": None, "engine_index": True}, None),
])
def test_rank_key_is_the_dp_part_of_the_tag_or_the_engine_index(rec: dict[str, Any],
                                                                 key: str | None) -> None:
    assert rank_key(rec) == key


def _table(*recs: dict[str, Any]) -> RankTable:
    table = RankTable()
    for r in recs:
        table.update(rank_key(r), r["_t"], None, r["kind"], r)
    return table


def test_totals_sum_the_ranks_and_usage_is_the_highest_with_the_mean() -> None:
    table = _table(*(_dec(f"DP{d} TP{d} EP{d}", T0, 600.0 + d, running=20 + d, queue=d,
                          usage=0.2 + 0.1 * d) for d in range(4)))
    t = table.totals()
    assert t.gen_throughput == pytest.approx(2406.0)
    assert t.running_req == 86 and t.queue_req == 6
    assert t.token_usage == pytest.approx(0.5)
    assert t.token_usage_mean == pytest.approx(0.35)
    now = table.snapshot()
    assert now is not None and now.multi and now.live_ranks == 4
    assert [r.rank for r in now.ranks] == ["DP0", "DP1", "DP2", "DP3"]


def test_each_rank_counts_once_with_its_latest_line() -> None:
    table = _table(_dec("DP0", T0, 100.0), _dec("DP1", T0, 200.0), _dec("DP0", T0 + 2, 150.0))
    assert table.totals().gen_throughput == 350.0


def test_ranks_are_in_numeric_order() -> None:
    now = _table(*(_dec(f"DP{d}", T0, 1.0) for d in (10, 2, 1))).snapshot()
    assert now is not None and [r.rank for r in now.ranks] == ["DP1", "DP2", "DP10"]


def test_a_rank_that_stopped_printing_drops_out_after_a_few_of_its_intervals() -> None:
    recs = []
    for k in range(20):  # every rank prints every 4 s; DP1 stops after 20 s
        for d in range(3):
            if d == 1 and k > 5:
                continue
            recs.append(_dec(f"DP{d}", T0 + 4 * k, 100.0))
    table = RankTable()
    live_at: list[tuple[float, int]] = []
    for r in recs:
        table.update(rank_key(r), r["_t"], None, "decode", r)
        now = table.snapshot()
        assert now is not None
        live_at.append((r["_t"] - T0, now.live_ranks))
    # DP1's last line at 20 s; its interval 4 s: out once the newest line is past 20 + 12 s
    assert all(n == 3 for t, n in live_at if 20 < t <= 20 + max(MIN_DROP_S, 12.0))
    assert all(n == 2 for t, n in live_at if t > 32)
    assert table.totals().gen_throughput == 200.0
    now = table.snapshot()
    assert now is not None and [r.live for r in now.ranks] == [True, False, True]
    assert now.ranks[1].interval_s == 4.0


def test_a_server_gone_idle_keeps_every_ranks_last_figures() -> None:
    table = _table(*(_dec(f"DP{d}", T0 + k, 50.0) for k in range(0, 40, 4) for d in range(4)))
    assert table.totals().gen_throughput == 200.0  # nothing newer: no rank is behind


def test_tracker_series_are_the_server_totals_and_the_peak_is_the_total() -> None:
    tr = ServerLogTracker("dp.log")
    recs = []
    for k in range(30):
        for d in range(8):
            rec = _dec(f"DP{d} TP{d} EP{d}", 0.0, 680.0 + d, running=30, queue=2,
                       usage=0.95 if d == 5 else 0.2)
            rec["ts"] = f"2026-06-01T12:00:{2 * k:02d}"
            recs.append(rec)
    tr.feed(recs, T0)
    snap = tr.snapshot(T0)
    total = sum(680.0 + d for d in range(8))
    assert snap.gen_throughput.last == pytest.approx(total)
    assert snap.running_req.last == 240 and snap.queue_req.last == 16
    assert snap.token_usage.last == pytest.approx(0.95)
    assert snap.peak is not None and snap.peak.gen_throughput == pytest.approx(total)
    assert snap.now is not None and snap.now.token_usage_mean == pytest.approx((7 * 0.2 + 0.95) / 8)
    assert len(snap.now.ranks) == 8 and all(r.interval_s == 2.0 for r in snap.now.ranks)


def test_a_single_rank_log_keeps_its_lines_own_figures() -> None:
    tr = ServerLogTracker()
    recs = [_dec("TP0", 0.0, g, running=r, usage=u) for g, r, u in
            ((500.0, 10, 0.3), (700.0, 12, 0.4), (650.0, 11, 0.35))]
    recs.append({"kind": "prefill", "line": 4, "ts": None, "rank": "TP0", "engine": "sglang",
                 "new_seq": 1, "new_token": 10, "cached_token": 0, "token_usage": 0.41,
                 "running_req": 12, "queue_req": None})
    tr.feed(recs, T0)
    snap = tr.snapshot(T0)
    assert snap.gen_throughput.v == (500.0, 700.0, 650.0)
    assert snap.running_req.v == (10, 12, 11, 12) and snap.queue_req.v == (0, 0, 0)
    assert snap.token_usage.v == (0.3, 0.4, 0.35, 0.41)
    assert snap.peak is not None and snap.peak.gen_throughput == 700.0
    assert snap.now is not None and not snap.now.multi and snap.now.ranks[0].rank is None


def test_a_restart_starts_the_ranks_over() -> None:
    tr = ServerLogTracker()
    tr.feed([_dec(f"DP{d}", 0.0, 100.0) for d in range(4)], T0)
    tr.feed([{"kind": "event", "event": "ready", "line": 9, "ts": None, "rank": None,
              "engine": "sglang", "message": "ready"},
             {"kind": "event", "event": "ready", "line": 10, "ts": None, "rank": None,
              "engine": "sglang", "message": "ready"}], T0)
    tr.feed([_dec("DP0", 0.0, 100.0)], T0 + 1)
    now = tr.snapshot(T0 + 1).now
    assert now is not None and len(now.ranks) == 1 and now.gen_throughput == 100.0


def test_prefill_lines_move_running_and_usage_but_not_throughput() -> None:
    tr = ServerLogTracker()
    tr.feed([_dec("DP0", 0.0, 100.0, running=5), _dec("DP1", 0.0, 200.0, running=5),
             {"kind": "prefill", "line": 3, "ts": None, "rank": "DP1 TP1", "engine": "sglang",
              "new_seq": 2, "new_token": 100, "cached_token": 0, "token_usage": 0.7,
              "running_req": 9, "queue_req": 4}], T0)
    now = tr.snapshot(T0).now
    assert now is not None
    assert (now.gen_throughput, now.running_req, now.queue_req) == (300.0, 14.0, 4.0)
    assert now.token_usage == 0.7


def test_vllm_engines_are_ranks() -> None:
    tr = ServerLogTracker()
    tr.feed([{"kind": "decode", "line": i, "ts": "06-01T12:00:10", "rank": None,
              "engine": "vllm", "engine_index": i, "gen_throughput": 150.0 + i,
              "running_req": 4, "queue_req": 1, "token_usage": 0.1 * (i + 1), "tokens": None}
             for i in range(4)], T0)
    now = tr.snapshot(T0).now
    assert now is not None and [r.rank for r in now.ranks] == [f"engine {i}" for i in range(4)]
    assert now.gen_throughput == 606.0 and now.running_req == 16.0
    assert now.token_usage == pytest.approx(0.4) and now.tokens is None


def test_one_named_rank_has_its_own_figures_as_the_totals() -> None:
    table = _table(_dec(None, T0, 150.0, running=3, usage=0.2, engine_index=0),
                   _dec(None, T0 + 10, 180.0, running=4, usage=0.3, engine_index=0))
    assert not table.multi
    t = table.totals()
    assert (t.gen_throughput, t.running_req, t.token_usage, t.token_usage_mean) == \
        (180.0, 4.0, 0.3, 0.3)
    assert table.total_gen() == 180.0


def test_a_vllm_log_of_one_engine_summarises_as_printed(real_logs) -> None:  # type: ignore[no-untyped-def]
    from dash.commands.summary import summarize

    doc = summarize(real_logs / "vllm-30599-v0.12-health-interleaved.log")
    gen = doc["gen_throughput"]
    assert doc["ranks"] == [] and gen["peak"]["gen_throughput"] > 100.0
