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
    # SGLang's EPD encoder servers name their process after the stamp (configure_logger prefix)
    ("[2026-03-01 12:00:05 encode_server] ", "2026-03-01T12:00:05", None),
    ("[2026-03-01 12:00:05.417 encode_dp_worker[3]] ", "2026-03-01T12:00:05.417", None),
    ("(SGLangEngine pid=4242) [2026-03-01 12:00:05 TP0] ", "2026-03-01T12:00:05", "TP0"),
    ("(SGLangEngine pid=4242, ip=10.0.0.3) [2026-03-01 12:00:05] ", "2026-03-01T12:00:05", None),
    ("2025-10-20 03:02:22 INFO 31223 [DP3 TP3 EP3 scheduler.py:222] ", "2025-10-20T03:02:22",
     "DP3 TP3 EP3"),
    ("2026-06-07 10:59:31,659 [INFO] sglang.srt.managers.scheduler: ", "2026-06-07T10:59:31.659",
     None),
    ("2026-06-07 10:59:31,659 - sglang.srt.managers.scheduler - INFO - ",
     "2026-06-07T10:59:31.659", None),
    # a collector's zoned stamp is the record's: its year and zone say when, with no guess
    ("2025-10-20T03:02:22.123456789Z [2025-10-20 03:02:22 TP0] ",
     "2025-10-20T03:02:22.123456789Z", "TP0"),
    ("2025-10-20T03:02:22.123456789Z ", "2025-10-20T03:02:22.123456789Z", None),
    ("2025-10-20T12:02:22.123456789+09:00 [2025-10-20 03:02:22 TP0] ",
     "2025-10-20T12:02:22.123456789+09:00", "TP0"),
    ("[2026-02-11T08:15:03Z] [2026-02-11 08:15:03] ", "2026-02-11T08:15:03Z", None),  # CI
    ("2025-10-20T03:02:22.123456789Z stderr F [2025-10-20 03:02:22 TP1] ",  # a CRI log file
     "2025-10-20T03:02:22.123456789Z", "TP1"),
    ("sglang-1  | [2025-10-20 03:02:22 TP0] ", "2025-10-20T03:02:22", "TP0"),  # docker compose
    ("sglang-1  | 2025-10-20T03:02:22.000000001Z [2025-10-20 03:02:22 TP0] ",
     "2025-10-20T03:02:22.000000001Z", "TP0"),
    # journald: `short` (no year, no zone: the line's own stamp wins) and `short-iso`
    ("Feb 11 08:15:03 gpu-node-1 sglang[4021]: [2026-02-11 08:15:03 TP0] ",
     "2026-02-11T08:15:03", "TP0"),
    ("Feb 11 08:15:03 gpu-node-1 python3[4021]: ", "02-11T08:15:03", None),
    ("2026-02-11T08:15:03+0000 gpu-node-1 sglang[4021]: [2026-02-11 08:15:03 DP1 TP2] ",
     "2026-02-11T08:15:03+00:00", "DP1 TP2"),
    # Ray actors, with and without a name; their ranks where the line prints none
    ("(pid=45601) [2026-03-01 12:00:05 TP0] ", "2026-03-01T12:00:05", "TP0"),
    ("(SchedulerActor pid=4123, ip=10.0.0.12) [2026-03-01 12:00:05 PP0 TP1] ",
     "2026-03-01T12:00:05", "PP0 TP1"),
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
                   "^[[1;36m(APIServer pid=1)^[[0;0m INFO 05-01 12:00:10 [loggers.py:236] ",
                   # vllm/logger.py: f"{envs.VLLM_LOGGING_PREFIX}%(levelname)s %(asctime)s "
                   # "[%(fileinfo)s:%(lineno)d] %(message)s", the prefix a bracketed tag
                   "[node-3] INFO 05-01 12:00:10 [loggers.py:236] Engine 000: ",
                   "(APIServer pid=1) [vllm]INFO 05-01 12:00:10 [loggers.py:236] Engine 000: "):
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


@pytest.mark.parametrize(("prefix", "rank", "process"), [
    # vLLM process tags, any name (`_add_prefix` / the 0.32+ log format), the ranks they name
    ("(VllmWorker rank=3 pid=1187) ", "rank=3", "VllmWorker"),
    ("(VllmWorker TP0 pid=1187) ", "TP0", "VllmWorker"),
    ("(VllmWorker PP1_TP0 pid=1187) ", "PP1 TP0", "VllmWorker"),
    ("(Worker_TP0 pid=2301) ", "TP0", "Worker"),
    ("(Worker_DP1_TP0_EP1 pid=2301) ", "DP1 TP0 EP1", "Worker"),
    ("(Worker_PP1_PCP0_TP3 pid=2301) ", "PP1 PCP0 TP3", "Worker"),
    ("(EngineCore_DP1 pid=2201) ", "DP1", "EngineCore"),
    ("(EngineCore pid=2201) ", None, "EngineCore"),
    ("(APIServer pid=1) ", None, "APIServer"),
    ("(ApiServer_0 pid=1) ", None, "ApiServer_0"),
    ("(VllmWorkerProcess pid=176029) ", None, "VllmWorkerProcess"),
    ("(RayWorkerWrapper pid=4123, ip=10.0.0.12) ", None, "RayWorkerWrapper"),
    ("\x1b[1;36m(Worker_TP1 pid=2302)\x1b[0;0m ", "TP1", "Worker"),
    ("2025-10-20T03:02:22.123456789Z (Worker_TP2 pid=2303) ", "TP2", "Worker"),
    # a Ray worker's line forwarded by the engine process, which decorates its own stdout
    # (vllm/utils `decorate_logs`: f"({process_name} pid={pid}) "): both tags, as printed in
    # vLLM 0.10+ Ray runs (`(EngineCore_DP0 pid=479) (RayWorkerWrapper pid=223, ip=...) INFO`)
    ("(EngineCore_DP0 pid=479) (RayWorkerWrapper pid=223, ip=192.168.141.7) ", "DP0",
     "RayWorkerWrapper"),
    ("(RayWorkerWrapper pid=3944622) (RayWorkerWrapper pid=3173774, ip=10.254.20.30) ", None,
     "RayWorkerWrapper"),
    ("(EngineCore_DP1 pid=479) (Worker_DP1_TP3 pid=500) ", "DP1 TP3", "Worker"),
    # vLLM 0.9: a data-parallel engine named by its number alone
    ("(EngineCore_1 pid=2201) ", "DP1", "EngineCore_1"),
    # vLLM 0.33+: VLLM_LOGGING_PREFIX comes before the process tag
    ("[node-a] (EngineCore_DP1 pid=2201) ", "DP1", "EngineCore"),
])
def test_vllm_process_tags_keep_the_stamp_level_and_rank(prefix: str, rank: str | None,
                                                         process: str) -> None:
    """The line's stamp and level are read after any process tag; an event names its process."""
    rec = parse_line(prefix + "ERROR 09-10 12:00:10 [core.py:586] EngineCore encountered a "
                     "fatal error.", 1)
    assert rec is not None and rec["event"] == "crash"
    assert rec["engine"] == "vllm" and rec["rank"] == rank and rec["component"] == "EngineCore"
    assert rec["ts"] == ("2025-10-20T03:02:22.123456789Z" if prefix[:1] == "2"
                         else "09-10T12:00:10")
    bare = parse_line(prefix + "torch.distributed.DistBackendError: NCCL error in: "
                      "../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled cuda error "
                      "(run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5", 2)
    assert bare is not None and bare["kind"] == "event" and bare["rank"] == rank
    assert bare["component"] == process and bare["engine"] == "vllm"


def test_stamps_out_of_range_are_no_stamps() -> None:
    rec = parse_line("[2025-13-45 99:00:00 TP0] " + BODY, 1)
    assert rec is not None and rec["ts"] is None
    rec = parse_line("INFO 13-01 10:00:00 [x.py:1] Avg prompt throughput: 1.0 tokens/s, "
                     "Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 4 reqs, "
                     "GPU KV cache usage: 5.0%", 1)
    assert rec is None or rec["ts"] is None


def test_ray_repeat_suffix_is_dropped() -> None:
    rec = parse_line("(RayWorkerWrapper pid=4123, ip=10.0.0.12) INFO 05-01 12:00:10 "
                     "[gpu_model_runner.py:1347] Model loading took 14.9860 GiB and 5.213400 "
                     "seconds \x1b[32m [repeated 7x across cluster]\x1b[0m", 1)
    assert rec is not None and rec["event"] == "load_weights" and rec["mem_usage_gb"] == 14.986
    assert "repeated" not in rec["message"]


@pytest.mark.parametrize(("line", "want"), [
    # vLLM 0.33+ `--log-formatter json` (python-json-logger, its JSON_FORMAT's keys)
    ('{"asctime": "2026-12-04 02:58:51,670", "levelname": "INFO", "name": "vllm.v1.metrics.loggers", '
     '"processName": "MainProcess", "process": 9172, "message": "Engine 000: Avg prompt throughput: '
     '1523.4 tokens/s, Avg generation throughput: 812.7 tokens/s, Running: 24 reqs, Waiting: 3 reqs, '
     'GPU KV cache usage: 37.5%, Prefix cache hit rate: 42.1%"}',
     {"kind": "decode", "ts": "2026-12-04T02:58:51.670", "engine": "vllm", "running_req": 24,
      "prefix_hit_rate": 0.421, "incomplete": None}),
    ('{"asctime": "2026-12-04 02:58:52,001", "levelname": "ERROR", "name": "vllm.v1.engine.core", '
     '"processName": "EngineCore_DP1", "process": 9180, "message": "EngineCore encountered a fatal '
     'error.", "exc_info": "Traceback (most recent call last):\\n  File \\"x.py\\", line 1\\nValueError: '
     'bad"}',
     {"event": "crash", "rank": "DP1", "component": "EngineCore", "ts": "2026-12-04T02:58:52.001"}),
    # SGLang through SGLANG_LOGGING_CONFIG_PATH: its keys as a config names them
    ('{"asctime": "2026-11-20 10:00:31", "levelname": "INFO", "name": "sglang.srt.managers.scheduler", '
     '"message": "Decode batch, #running-req: 32, #token: 41230, token usage: 0.09, cuda graph: True, '
     'gen throughput (token/s): 2327.27, #queue-req: 7"}',
     {"kind": "decode", "engine": "sglang", "queue_req": 7, "ts": "2026-11-20T10:00:31"}),
    # as a CRI log file keeps it: the collector's zoned stamp first
    ('2026-12-04T02:58:51.670123456Z stdout F {"asctime": "2026-12-04 02:58:51,670", "levelname": '
     '"ERROR", "name": "vllm.v1.engine.core", "processName": "MainProcess", "message": '
     '"EngineCore encountered a fatal error."}',
     {"event": "crash", "ts": "2026-12-04T02:58:51.670123456Z", "component": "EngineCore"}),
    # a custom format with the level first and the year in its stamp
    ("INFO 2026-11-20 10:00:33 [metrics_reporter.py:1061] Decode batch, #running-req: 32, #token: "
     "41230, token usage: 0.09, cuda graph: True, gen throughput (token/s): 2327.27, #queue-req: 0",
     {"kind": "decode", "ts": "2026-11-20T10:00:33", "incomplete": None}),
])
def test_json_log_lines_are_read_by_their_keys(line: str, want: dict[str, object]) -> None:
    rec = parse_line(line, 1)
    assert rec is not None and {k: rec.get(k) for k in want} == want


@pytest.mark.parametrize("line", [
    '{"asctime": "2026-12-04 02:58:51,670", "levelname": "INFO"}',  # no message
    '{"message": 3, "asctime": "yesterday"}', '{not json at all}', '{"message": "Killed"',
    '["message", "Decode batch"]',
    '{"message": "Health check failed", "a": ' + "[" * 5000 + "]" * 5000 + "}",  # too deep
])
def test_json_lines_without_a_message_are_read_as_text(line: str) -> None:
    rec = parse_line(line, 1)
    assert rec is None or rec["kind"] in ("unparsed", "event")
