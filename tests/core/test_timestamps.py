"""Log timestamps to epoch seconds; the date or year a line lacks comes from `ref`."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dash.core.log.timestamps import normalise_stamps, normalise_ts, ts_to_epoch

REF = datetime(2026, 3, 1, 12, 0, 0).timestamp()  # local time


def test_normalise() -> None:
    assert normalise_ts("2026-06-07 10:59:31,659") == "2026-06-07T10:59:31.659"
    assert normalise_ts("01-22 18:27:20") == "01-22T18:27:20"
    assert normalise_ts("04:40:55") == "04:40:55"


def test_full_dates_are_local_time() -> None:
    assert ts_to_epoch("2026-03-01T11:00:00", REF) == REF - 3600
    assert ts_to_epoch("2026-03-01T11:00:00.500", REF) == REF - 3599.5
    assert ts_to_epoch("2026-03-01 11:00:00", REF) == REF - 3600


def test_docker_utc() -> None:
    want = datetime(2025, 10, 20, 3, 2, 22, tzinfo=timezone.utc).timestamp() + 0.25
    assert ts_to_epoch("2025-10-20T03:02:22.250000000Z", REF) == pytest.approx(want)


def test_month_day_takes_year_from_ref_and_wraps_back() -> None:
    assert ts_to_epoch("03-01T11:00:00", REF) == REF - 3600
    december = ts_to_epoch("12-31T23:00:00", REF)
    assert december == datetime(2025, 12, 31, 23, 0, 0).timestamp()


def test_a_month_day_stamp_is_never_put_days_ahead_of_the_reference() -> None:
    # Read on 2 December, a vLLM log stamped 11 December is last year's, not nine days ahead.
    dec2 = datetime(2026, 12, 2, 1, 0, 0).timestamp()
    assert ts_to_epoch("12-11T20:30:36", dec2) == datetime(2025, 12, 11, 20, 30, 36).timestamp()
    assert ts_to_epoch("12-01T23:59:59", dec2) == datetime(2026, 12, 1, 23, 59, 59).timestamp()
    # A few hours ahead is a zone difference between the log's clock and the reader's.
    assert ts_to_epoch("12-02T09:00:00", dec2) == datetime(2026, 12, 2, 9, 0, 0).timestamp()
    # A log read on across New Year: the line after 31 December is the next year's.
    new_year = datetime(2026, 12, 31, 23, 59, 0).timestamp()
    assert ts_to_epoch("01-01T00:00:30", new_year) == datetime(2027, 1, 1, 0, 0, 30).timestamp()


def test_29_february_is_the_last_leap_years() -> None:
    assert ts_to_epoch("02-29T10:00:00", REF) == datetime(2024, 2, 29, 10, 0, 0).timestamp()


def test_time_only_takes_date_from_ref_and_wraps_to_day_before() -> None:
    assert ts_to_epoch("11:00:00", REF) == REF - 3600
    late = ts_to_epoch("23:30:00", REF)
    assert late == datetime(2026, 2, 28, 23, 30, 0).timestamp()


@pytest.mark.parametrize("bad", [None, "", "garbage", "2026-13-45T99:99:99", "99:99:99", "02-30T10:00:00"])
def test_garbage_is_none(bad: str | None) -> None:
    assert ts_to_epoch(bad, time.time()) is None


_STAMP_TEXT = st.text(alphabet="0123456789-: .,T\nZ+", max_size=30)
_PLAIN_FORM = st.builds(
    lambda y, md, t, frac, sep: f"{y}{md}{t}{sep}{frac}",
    st.sampled_from(["", "2026-"]), st.sampled_from(["", "03-01 ", "12-31 "]),
    st.sampled_from(["08:00:41", "23:59:59", "00:00:00"]), st.sampled_from(["", "1", "123456789"]),
    st.sampled_from([".", ","]),
).map(lambda s: s.rstrip(".,"))


@given(st.lists(st.one_of(_PLAIN_FORM, _STAMP_TEXT.filter(lambda s: "\n" not in s)), max_size=8))
def test_a_block_of_stamps_normalises_as_each_one_does(stamps: list[str]) -> None:
    """All at once where every stamp is of a bracket's plain forms, one by one otherwise:
    the same texts as `normalise_ts` gives each."""
    coded = [s.encode() for s in stamps]
    assert normalise_stamps(coded) == [normalise_ts(s) for s in stamps]
