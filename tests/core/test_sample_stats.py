"""Bounded statistics: exact while small, within 1% beyond; window and since start; rates."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from dash.core.samples.dist import EXACT_MAX, Running, summarize
from dash.core.samples.model import RawSample, Sample, SampleBatch
from dash.core.samples.stats import WINDOW, QualityStats
from dash.core.state.quality import RATE_WINDOW_S, QualityTracker


def s(tokens: int, finish: str = "stop", **kw) -> Sample:
    return Sample(shape="sglang", finish=finish, tokens=tokens, chars=tokens * 4, **kw)  # type: ignore[arg-type]


def batch(samples, **kw) -> SampleBatch:
    return SampleBatch("p", "p.jsonl", lines=len(samples) + kw.pop("extra_lines", 0),
                       samples=tuple(samples), **kw)


def test_quantiles_exact_when_small_and_close_when_large() -> None:
    rng = random.Random(1)
    values = [rng.randint(1, 20_000) for _ in range(EXACT_MAX * 5)]
    small, large = Running(), Running()
    for v in values[:500]:
        small.add(v)
    for v in values:
        large.add(v)
    assert small.dist() == summarize(values[:500])
    exact = summarize(values)
    got = large.dist()
    assert got.n == exact.n and got.max == exact.max and got.total == exact.total
    assert abs(got.median - exact.median) <= 0.011 * exact.median
    assert abs(got.p95 - exact.p95) <= 0.011 * exact.p95


def test_window_and_total() -> None:
    st = QualityStats()
    st.feed(batch([s(100) for _ in range(WINDOW)], restart=True))
    st.feed(batch([s(10_240, "length") for _ in range(50)] + [s(200)] * 150, invalid_count=2,
                  extra_lines=2))
    w, t = st.window(), st.total()
    assert w.samples == WINDOW and w.truncated == 50 and w.truncated_ratio == 0.25
    assert t.samples == 400 and t.truncated == 50 and t.lines == 402 and t.invalid == 2
    assert w.tokens.median == 200 and w.tokens.max == 10_240
    assert w.invalid == 2  # the invalid lines of the last read are in the window
    st.feed(batch([s(1)], restart=True))
    assert st.total().samples == 1  # a rewritten file starts again


def test_tokens_per_second_sums_arrivals_and_skips_the_backfill() -> None:
    tr = QualityTracker()
    tr.apply([batch([s(1000)] * 300, restart=True, backfill=True)], 0.0)
    assert tr.tokens_per_s(5.0) is None
    for t in range(1, 61):
        tr.apply([batch([s(300), s(300)])], float(t))  # 600 tokens a second
    rate = tr.tokens_per_s(60.0)
    assert rate is not None and 570 <= rate <= 600
    q = tr.snapshot("p", 60.0)
    assert q is not None and q.tokens_per_s == rate


def test_reasoning_seen_in_one_partition_is_expected_in_all() -> None:
    tr = QualityTracker()
    tr.apply([SampleBatch("a", "a", lines=30, samples=tuple(
        Sample("sglang", reasoning="present", chars=5) for _ in range(30)), backfill=True),
              SampleBatch("b", "b", lines=30, samples=tuple(
        Sample("sglang", reasoning="absent", chars=5) for _ in range(30)), backfill=True)], 0.0)
    qa, qb = tr.snapshot("a", 1.0), tr.snapshot("b", 1.0)
    assert qa is not None and qb is not None
    assert qa.reasoning_expected and qa.reasoning_seen_in == "a"
    assert qb.reasoning_expected and qb.reasoning_seen_in == "a"


def test_reasoning_in_one_record_shape_is_not_expected_of_another() -> None:
    """A chat file whose samples carry `reasoning_content` beside a flat `{"response": ...}`
    file: another pipeline, not a broken one; a second chat file is expected to carry it."""
    tr = QualityTracker()
    tr.apply([SampleBatch("chat", "chat", lines=30, samples=tuple(
        Sample("openai-chat", reasoning="present", chars=5) for _ in range(30)), backfill=True),
              SampleBatch("flat", "flat", lines=30, samples=tuple(
        Sample("flat", reasoning="absent", chars=5) for _ in range(30)), backfill=True),
              SampleBatch("chat2", "chat2", lines=30, samples=tuple(
        Sample("openai-chat", reasoning="absent", chars=5) for _ in range(30)), backfill=True)],
             0.0)
    flat, chat2 = tr.snapshot("flat", 1.0), tr.snapshot("chat2", 1.0)
    assert flat is not None and chat2 is not None
    assert not flat.reasoning_expected and flat.reasoning_seen_in is None
    assert chat2.reasoning_expected and chat2.reasoning_seen_in == "chat"


def test_a_rewritten_file_never_reuses_a_version_a_snapshot_was_cached_at() -> None:
    """The tracker caches a partition's window by the stats' version: a file rewritten after
    one read must not find its old figures under the same number."""
    tr = QualityTracker()
    tr.apply([batch([s(100, "length")] * 10)], 0.0)
    first = tr.snapshot("p", 0.0)
    assert first is not None and first.window.truncated == 10
    tr.apply([batch([s(100)], restart=True)], 1.0)
    again = tr.snapshot("p", 1.0)
    assert again is not None and again.window.samples == 1 and again.window.truncated == 0


def test_live_figures_are_kept_for_a_period_while_samples_arrive() -> None:
    """The live screen's tracker works its figures out at most every period: a moving window
    would otherwise change the table and each quality alert's evidence every refresh."""
    tr = QualityTracker(period_s=5.0)
    tr.apply([batch([s(100)] * 10)], 0.0)
    first = tr.snapshot("p", 0.0)
    assert first is not None and first.window.samples == 10  # the first figures at once
    tr.apply([batch([s(100, "length")] * 10)], 1.0)
    kept = tr.snapshot("p", 4.0)
    assert kept is not None and kept.window == first.window and kept.total == first.total
    later = tr.snapshot("p", 5.0)
    assert later is not None and later.window.samples == 20 and later.window.truncated == 10
    exact = QualityTracker()  # the headless commands' tracker: every snapshot exact
    exact.apply([batch([s(100)] * 10)], 0.0)
    exact.snapshot("p", 0.0)
    exact.apply([batch([s(100, "length")] * 10)], 1.0)
    now = exact.snapshot("p", 1.0)
    assert now is not None and now.window.truncated == 10


def test_a_rewritten_file_and_a_first_invalid_line_show_at_once() -> None:
    tr = QualityTracker(period_s=5.0)
    tr.apply([batch([s(100, "length")] * 10)], 0.0)
    tr.snapshot("p", 0.0)
    tr.apply([batch([s(100)], restart=True)], 1.0)
    again = tr.snapshot("p", 1.0)
    assert again is not None and again.window.samples == 1 and again.window.truncated == 0
    tr.apply([batch([s(100)], invalid_count=1, extra_lines=1)], 2.0)
    bad = tr.snapshot("p", 2.0)
    assert bad is not None and bad.total.invalid == 1
    tr.apply([batch([s(100)], invalid_count=1, extra_lines=1)], 3.0)
    kept = tr.snapshot("p", 3.0)  # later ones wait for the period like the rest
    assert kept is not None and kept.total.invalid == 1


def test_every_partition_s_live_figures_change_in_the_same_refresh() -> None:
    """Partitions whose samples came at different times still show new figures together, once
    a period: each on a clock of its own changed the screen (and the alerts' rows) up to once
    per partition."""
    tr = QualityTracker(period_s=5.0)

    def part(name: str, finish: str = "stop") -> SampleBatch:
        return SampleBatch(name, f"{name}.jsonl", lines=1, samples=(s(100, finish),))

    tr.apply([part("a")], 0.0)
    tr.snapshot("a", 0.0)  # a's first figures, and a period starts
    tr.apply([part("b")], 2.0)
    first_b = tr.snapshot("b", 2.0)  # b's first figures show at once
    assert first_b is not None and first_b.window.samples == 1
    for now in (3.0, 4.0):
        tr.apply([part("a", "length"), part("b", "length")], now)
        a, b = tr.snapshot("a", now), tr.snapshot("b", now)
        assert a is not None and b is not None
        assert (a.window.samples, b.window.samples) == (1, 1)  # both wait for the period
    a, b = tr.snapshot("a", 5.0), tr.snapshot("b", 5.0)
    assert a is not None and b is not None
    assert (a.window.samples, b.window.samples) == (3, 3)  # b too, 3 s after its first figures
    assert (a.window.truncated, b.window.truncated) == (2, 2)


def test_the_last_error_and_the_limits_change_with_the_figures_they_stand_beside() -> None:
    """An alert's evidence names the last error record and the token limit beside the counts:
    on the live screen they change with the figures, once a period, not with every record."""
    tr = QualityTracker(period_s=5.0)
    tr.apply([batch([s(100, error="first", limit=1024)])], 0.0)
    first = tr.snapshot("p", 0.0)
    assert first is not None and first.last_error == "first" and first.limits == (1024,)
    tr.apply([batch([s(100, error="second", limit=2048), s(100, limit=2048)])], 1.0)
    kept = tr.snapshot("p", 4.0)
    assert kept is not None and (kept.last_error, kept.limits) == ("first", (1024,))
    later = tr.snapshot("p", 5.0)
    assert later is not None and later.last_error == "second" and later.limits[0] == 2048
    exact = QualityTracker()  # the headless commands': every snapshot exact
    exact.apply([batch([s(100, error="first")])], 0.0)
    exact.snapshot("p", 0.0)
    exact.apply([batch([s(100, error="second")])], 1.0)
    now = exact.snapshot("p", 1.0)
    assert now is not None and now.last_error == "second"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 700, allow_nan=False), st.integers(0, 5000),
                          st.booleans()), max_size=40),
       st.lists(st.floats(0, 900, allow_nan=False), min_size=1, max_size=5),
       st.booleans())
def test_tokens_per_second_kept_as_a_sum_is_the_window_summed(reads, looks, in_order) -> None:
    """The rate's sum, kept as reads come and go, is the sum over the arrivals in its span."""
    reads = sorted(reads) if in_order else reads
    tr = QualityTracker(min_span_s=0.0)
    tr.apply([batch([s(1)], restart=True, backfill=True)], 0.0)
    arrivals: list[tuple[float, int]] = []
    first: float | None = None
    for now, tokens, backfill in reads:
        tr.apply([batch([s(tokens)], backfill=backfill)], now)
        if not backfill:
            first = now if first is None else first
            arrivals.append((now, tokens))
        arrivals = [(t, n) for t, n in arrivals if not now - t > RATE_WINDOW_S]
    last = max((now for now, _, _ in reads), default=0.0)
    for look in sorted(last + x for x in looks):
        got = tr.tokens_per_s(look)
        if first is None or look - first <= 0:
            assert got is None
            continue
        span = min(RATE_WINDOW_S, look - first)
        assert got == sum(n for t, n in arrivals if look - t < span and t > first) / span


def test_reads_applied_out_of_order_still_sum_only_their_span() -> None:
    tr = QualityTracker(min_span_s=0.0)
    for now, tokens in ((10.0, 1), (400.0, 5), (20.0, 7)):
        tr.apply([batch([s(tokens)])], now)
    assert tr.tokens_per_s(405.0) == 5 / 300


def test_read_once_a_period_tokens_per_second_is_the_last_read_s_and_decays_when_none_come(
) -> None:
    every = QualityTracker(read_every_s=5.0)
    each = QualityTracker()
    for tr in (every, each):
        tr.apply([batch([s(1)], restart=True, backfill=True)], 0.0)
    for t in range(5, 121, 5):
        every.apply([batch([s(3000)])], float(t))  # 600 tokens a second, read every 5 s
        each.apply([batch([s(3000)])], float(t))
    assert every.tokens_per_s(120.0) == each.tokens_per_s(120.0)
    for later in (121.0, 122.5, 124.9):  # between two reads: the last read's figure
        assert every.tokens_per_s(later) == each.tokens_per_s(120.0)
    assert each.tokens_per_s(124.9) < each.tokens_per_s(120.0)  # what it did before
    # No read brings samples any more: the rate sinks, a period behind.
    assert every.tokens_per_s(140.0) == each.tokens_per_s(135.0)


def test_a_snapshot_is_given_again_only_while_nothing_it_shows_changed() -> None:
    tr = QualityTracker(period_s=5.0)
    raw = lambda i: RawSample(f'{{"n": {i}}}', i, i)  # noqa: E731
    tr.apply([batch([s(10)], restart=True, latest=(raw(1),))], 0.0)
    q1 = tr.snapshot("p", 1.0)
    assert tr.snapshot("p", 2.0) is q1
    tr.apply([batch([s(20)], latest=(raw(2),))], 2.5)  # the figures wait for the period...
    q2 = tr.snapshot("p", 3.0)
    assert q2 is not q1 and q2.window == q1.window  # ...the raw lines do not
    assert [r.text for r in q2.latest] == ['{"n": 1}', '{"n": 2}']
