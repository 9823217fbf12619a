"""Every line prefix real servers print, and garbage that must never raise."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dash.core.log.parse import parse_line

BODY = ("Decode batch, #running-req: 32, #token: 41230, token usage: 0.09, cuda graph: True, "
        "gen throughput (token/s): 2327.27, #queue-req: 0")


@pytest.mark.parametrize(("prefix", "ts", "rank"), [
    ("", None, None),
    ("[12:00:05 TP0] ", "12:00:05", "TP0"),
    ("[2026-03-01 12:00:05] ", "2026-03-01T12:00:05", None),
    ("[2026-03-01 12:00:05.417] ", "2026-03-01T12:00:05.417", None),
    ("[2026-03-01 12:00:05.417 DP1 PP0 TP3 EP3] ", "2026-03-01T12:00:05.417", "DP1 PP0 TP3 EP3"),
    ("[2026-03-01 12:00:05 DP1 PP1 ATTN_CP1 MOE_DP0 TP7 EP7] ", "2026-03-01T12:00:05",
     "DP1 PP1 ATTN_CP1 MOE_DP0 TP7 EP7"),
    ("[2026-03-01 12:00:05 TP0 PP1] ", "2026-03-01T12:00:05", "TP0 PP1"),
    ("(SGLangEngine pid=4242) [2026-03-01 12:00:05 TP0] ", "2026-03-01T12:00:05", "TP0"),
    ("(SGLangEngine pid=4242, ip=10.0.0.3) [2026-03-01 12:00:05] ", "2026-03-01T12:00:05", None),
    ("2025-10-20 03:02:22 INFO 31223 [DP3 TP3 EP3 scheduler.py:222] ", "2025-10-20T03:02:22",
     "DP3 TP3 EP3"),
    ("2026-06-07 10:59:31,659 [INFO] sglang.srt.managers.scheduler: ", "2026-06-07T10:59:31.659",
     None),
    ("2026-06-07 10:59:31,659 - sglang.srt.managers.scheduler - INFO - ",
     "2026-06-07T10:59:31.659", None),
    ("2025-10-20T03:02:22.123456789Z [2025-10-20 03:02:22 TP0] ", "2025-10-20T03:02:22", "TP0"),
    ("2025-10-20T03:02:22.123456789Z ", "2025-10-20T03:02:22.123456789Z", None),
    ("\x1b[32m[2026-03-01 12:00:05 TP0]\x1b[0m ", "2026-03-01T12:00:05", "TP0"),
    ("^[[32m[2026-03-01 12:00:05 TP0]^[[0m ", "2026-03-01T12:00:05", "TP0"),
    ("Capturing batches (bs=1 avail_mem=10.28 GB):   0%|    | 0/23 [00:00<?, ?it/s]"
     "[2026-03-01 12:00:05 TP3] ", "2026-03-01T12:00:05", "TP3"),
])
@pytest.mark.parametrize("ending", ["", "\n", "\r\n", "^M", ", ", ", \n"])
def test_prefixes(prefix: str, ts: str | None, rank: str | None, ending: str) -> None:
    rec = parse_line(prefix + BODY + ending, 3)
    assert rec is not None
    assert (rec["kind"], rec["ts"], rec["rank"]) == ("decode", ts, rank)
    assert (rec["running_req"], rec["tokens"], rec["gen_throughput"], rec["queue_req"]) == (
        32, 41230, 2327.27, 0)


def test_vllm_prefixes() -> None:
    stats = ("Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, "
             "Running: 3 reqs, Waiting: 4 reqs, GPU KV cache usage: 5.0%")
    for prefix in ("INFO 05-01 12:00:10 [loggers.py:111] Engine 000: ",
                   "INFO 05-01 12:00:10 loggers.py:78] ",
                   "(APIServer pid=1) INFO 05-01 12:00:10 [loggers.py:236] Engine 000: ",
                   "^[[1;36m(APIServer pid=1)^[[0;0m INFO 05-01 12:00:10 [loggers.py:236] "):
        rec = parse_line(prefix + stats + "^M")
        assert rec is not None, prefix
        assert (rec["engine"], rec["ts"], rec["running_req"], rec["queue_req"], rec["token_usage"]) == (
            "vllm", "05-01T12:00:10", 3, 4, 0.05)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=400))
def test_garbage_never_raises(text: str) -> None:
    rec = parse_line(text)
    if rec is not None:
        assert rec["kind"] in {"decode", "prefill", "event", "unparsed"}


KEYWORDISH = st.sampled_from([
    "Decode batch", "Prefill batch", ", ", ": ", "#running-req: ", "#token: ", "token usage: ",
    "gen throughput (token/s): ", "#queue-req: ", "[2025-01-01 00:00:00 TP0] ", "server_args=",
    "ServerArgs(", "{'", "'", "(", ")", "[", "]", "=", "1", "0.5", "-1", "nan", "1e999", "%",
    "Avg prompt throughput: ", "Running: ", "KV Cache is allocated. #tokens: ", "avail mem=",
    "max_total_num_tokens=", "Capture cuda graph end. ", "Killed", "\x1b[", "^[[", "^M", "\r",
    "Traceback", "Error: ", "\x00", "\ufffd", " ", "full=", "swa=", "GB", "mixed #running-req: ",
])


@settings(max_examples=600, deadline=None)
@given(st.lists(KEYWORDISH, max_size=30).map("".join))
def test_near_miss_lines_never_raise(text: str) -> None:
    rec = parse_line(text, 1)
    if rec is not None:
        assert rec["kind"] in {"decode", "prefill", "event", "unparsed"}
