"""The exposition checker finds what `promtool check metrics` finds (and promtool agrees, where
it is installed), so the tests that run kdash's scrapes through it can fail."""

from __future__ import annotations

import pytest
from exposition_lint import lint, promtool_problems

BAD = """\
# HELP kdash_partition_total Expected samples.
# TYPE kdash_partition_total gauge
kdash_partition_total{partition="B1"} 10.0
# HELP kdash_restarts Restarts.
# TYPE kdash_restarts counter
kdash_restarts 1.0
# TYPE kdash_no_help gauge
kdash_no_help 1.0
# HELP kdash_poll_milliseconds Poll time.
# TYPE kdash_poll_milliseconds gauge
kdash_poll_milliseconds 3.0
# HELP kdash_lines_count Lines.
# TYPE kdash_lines_count gauge
kdash_lines_count 3.0
# HELP kdash_queue_gauge Queue.
# TYPE kdash_queue_gauge gauge
kdash_queue_gauge{gpuIndex="0"} 3.0
# HELP kdash_latency_ms Latency.
# TYPE kdash_latency_ms gauge
kdash_latency_ms 3.0
"""
BAD_NAMES = {"kdash_partition_total", "kdash_restarts", "kdash_no_help", "kdash_poll_milliseconds",
             "kdash_lines_count", "kdash_queue_gauge", "kdash_latency_ms"}
GOOD = """\
# HELP kdash_partition_expected Expected samples.
# TYPE kdash_partition_expected gauge
kdash_partition_expected{partition="B1"} 10.0
# HELP kdash_server_restarts_total Restarts.
# TYPE kdash_server_restarts_total counter
kdash_server_restarts_total 1.0
# HELP kdash_poll_seconds Poll time.
# TYPE kdash_poll_seconds gauge
kdash_poll_seconds 0.003
"""


def test_every_kind_of_problem_is_found() -> None:
    found = lint(BAD)
    assert {p.split(":", 1)[0] for p in found} == BAD_NAMES
    assert "kdash_partition_total: non-counter metrics should not have \"_total\" suffix" in found
    assert any(p.startswith("kdash_queue_gauge: names should be written in 'snake_case'")
               for p in found)


def test_a_clean_exposition_has_no_problem() -> None:
    assert lint(GOOD) == []


def test_text_the_parser_rejects_is_an_error() -> None:
    with pytest.raises(ValueError):
        lint("kdash_x{partition=B1} 1\n")


@pytest.mark.parametrize(("text", "code"), [(BAD, 3), (GOOD, 0)])
def test_promtool_agrees_where_it_is_installed(text: str, code: int) -> None:
    got = promtool_problems(text)
    if got is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    rc, out = got
    assert rc == code, out
    assert {line.split()[0] for line in out.splitlines() if line.strip()} == \
        ({p.split(":", 1)[0] for p in lint(text)} if code else set())
