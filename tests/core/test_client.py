"""The client log: tqdm bars, resumption, tracebacks, growth."""

from __future__ import annotations

import pytest

from dash.core.config import Config
from dash.core.state.client import ClientTracker, parse_progress


@pytest.mark.parametrize(("text", "done", "total", "pct", "rate"), [
    ("45%|####      | 450/1000 [00:10<00:12, 40.1it/s]", 450, 1000, 45.0, 40.1),
    ("Processing B2:  3%|▎         | 31/1000 [01:02<32:10,  2.00s/it]", 31, 1000, 3.0, 0.5),
    ("12/? [00:01, 9.5it/s]", 12, None, None, 9.5),
    ("100%|██████████| 1.2k/1.2k [10:00<00:00, 2.00it/s]", 1200, 1200, 100.0, 2.0),
])
def test_tqdm_bars(text: str, done: int, total: int | None, pct: float | None, rate: float) -> None:
    p = parse_progress(text)
    assert p is not None
    assert (p.done, p.total, p.percent) == (done, total, pct)
    assert p.rate == pytest.approx(rate)


def test_not_a_bar() -> None:
    assert parse_progress("loaded 3 of 5 shards") is None
    assert parse_progress("x" * 100000) is None


def test_resuming_traceback_and_errors_become_state(clock) -> None:
    t = ClientTracker(Config(client_log=None, process="run_inference"))
    t.feed([
        "Resuming: 1374 already done",
        "Traceback (most recent call last):",
        '  File "run.py", line 3, in <module>',
        "    main()",
        "openai.APIConnectionError: Connection error.",
        "ValueError: bad prompt",
        "just text",
    ], clock.now(), partial=" 10%|#| 100/1000 [00:01<00:09, 99.0it/s]")
    s = t.snapshot(clock.now())
    assert s.resuming == 1374
    assert [e["message"] for e in s.events] == ["openai.APIConnectionError: Connection error.",
                                                "ValueError: bad prompt"]
    assert s.last_progress is not None and s.last_progress.done == 100
    assert s.process_pattern == "run_inference" and s.processes is None


def test_log_growth_is_stamped_only_when_it_grows() -> None:
    t = ClientTracker(Config(client_log="c.log"))  # type: ignore[arg-type]
    t.note_file(100, 1.0)
    assert t.snapshot(1.0).log_last_growth is None
    t.note_file(100, 2.0)
    t.note_file(150, 3.0)
    s = t.snapshot(3.0)
    assert (s.log_bytes, s.log_last_growth, s.log_path) == (150, 3.0, "c.log")
    t.note_file(None, 4.0)
    assert t.snapshot(4.0).log_bytes is None


def test_bounded_memory() -> None:
    t = ClientTracker(max_events=5, max_lines=5)
    t.feed(["RuntimeError: x"] * 100, 0.0)
    s = t.snapshot(0.0)
    assert len(s.events) == 5 and len(s.last_lines) == 5


def test_a_line_of_several_tqdm_bars_gives_the_one_drawn_last_without_cursor_codes() -> None:
    # tqdm with a bar per worker (`position=`) redraws bar 1 on the next line, moves the cursor
    # back up (`ESC [A`) and redraws bar 0 after a `\r`: the terminal shows bar 0's newest state.
    line = ("\rB:   4%|#         | 201/5000 [00:01<40:00, 1.00it/s]\x1b[A"
            "\rA:  27%|##        | 1377/5000 [00:01<20:00, 3.00it/s]")
    p = parse_progress(line)
    assert p is not None and (p.done, p.total) == (1377, 5000)
    t = ClientTracker()
    t.feed([], 0.0, partial="\rB:   4%|#         | 202/5000 [00:02<40:00, 1.00it/s]\x1b[A")
    s = t.snapshot(0.0)
    assert s.last_progress is not None and s.last_progress.text.startswith("B:")
    assert "\x1b" not in s.last_progress.text


def test_the_last_bar_of_each_label_is_kept_within_bounds() -> None:
    from dash.core.state.client import MAX_BARS

    t = ClientTracker()
    t.feed([f"part{i}:  50%|#####     | 5/10 [00:05<00:05, 1.00it/s]" for i in range(100)]
           + ["part7:  60%|######    | 6/10 [00:06<00:04, 1.00it/s]"], 0.0)
    bars = t.snapshot(0.0).bars
    assert len(bars) == MAX_BARS
    assert bars[-1].label == "part7" and bars[-1].done == 6
    assert t.snapshot(0.0).last_progress == bars[-1]


# tqdm's own format (tqdm/std.py `format_meter`): `{n_fmt}/{total_fmt} [{elapsed}<{remaining},
# {rate_fmt}{postfix}]`, `{n_fmt}{unit} [{elapsed}, {rate_fmt}{postfix}]` with no total; with
# unit_scale the rate gets format_sizeof's SI prefix too. vLLM's LLM.generate bar adds a postfix.
@pytest.mark.parametrize(("text", "done", "total", "rate"), [
    (" 1%|          | 1.2k/100k [00:10<14:00, 1.18kit/s]", 1200, 100000, 1180.0),
    ("tokens: 12%|█▏ | 1.2M/10.0M [00:10<01:20, 120kTok/s]", 1200000, 10000000, 120000.0),
    ("B1:  45%|████▌     | 450/1000 [00:10<00:12, 40.10it/s, loss=0.5, ok=440]", 450, 1000, 40.1),
    ("Processed prompts:  45%|████▌     | 450/1000 [00:10<00:12, 40.10it/s, est. speed input: "
     "1234.56 toks/s, output: 2345.67 toks/s]", 450, 1000, 40.1),
    ("Processing: 450it [00:10, 40.10it/s]", 450, None, 40.1),
    ("450it [00:10,  2.50s/it]", 450, None, 0.4),
])
def test_tqdm_bar_forms(text: str, done: int, total: int | None, rate: float) -> None:
    p = parse_progress(text)
    assert p is not None and (p.done, p.total) == (done, total)
    assert p.rate == pytest.approx(rate)


@pytest.mark.parametrize(("line", "event"), [
    # openai-python `_base_client`: log.info("Retrying request to %s in %f seconds", ...)
    ("INFO:openai._base_client:Retrying request to /chat/completions in 0.800000 seconds", "retry"),
    # httpx logs each answer at INFO: `HTTP Request: POST URL "HTTP/1.1 429 Too Many Requests"`
    ('INFO:httpx:HTTP Request: POST http://h:30000/v1/chat/completions '
     '"HTTP/1.1 503 Service Unavailable"', "retry"),
    ("Error code: 429 - {'error': {'message': 'Too many requests'}}", "retry"),
    ("2026-12-02 08:10:11,123 - gen - WARNING - request 17 retry 1/3 after 503", "retry"),
    ("httpx.ReadTimeout", "error"),
    ("aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected", "error"),
    ("Request failed: [Errno 111] Connection refused, retrying in 5s", "error"),
    ("Task exception was never retrieved", "error"),
    ('INFO:httpx:HTTP Request: POST http://h:30000/v1/chat/completions "HTTP/1.1 200 OK"', None),
    ("2026-12-02 08:10:11,123 - gen - INFO - wrote 100 samples, 0 errors", None),
])
def test_retries_and_request_errors(line: str, event: str | None) -> None:
    t = ClientTracker()
    t.feed([line], 1.0)
    events = t.snapshot(1.0).events
    assert [e["event"] for e in events] == ([event] if event else [])


@pytest.mark.parametrize("line", ["Resuming: 4500 already done", "Skipping 4500 already completed",
                                  "Found 4500 existing results, 5500 remaining",
                                  "2026-12-02 08:10:11,123 - gen - INFO - resuming from 4,500 "
                                  "completed"])
def test_resuming_wordings(line: str) -> None:
    t = ClientTracker()
    t.feed([line], 1.0)
    assert t.snapshot(1.0).resuming == 4500
