"""What kdash reads in a server log, in one place: prefixes, stats families, event phrases.

`GRAMMAR` below is the only description of the log formats (its event phrases are listed in
`dash.core.log.phrases`, the numbers of failure lines taken out in `dash.core.log.failures`).
The per-line parser (`dash.core.log.parser.LineParser`), its keyword prefilter, what counts as
a line that carries stats, the lines the bulk reader skips unread and the bulk reader's
compiled shapes (`dash.core.log.bulk`) are all derived from it, so a new shape is taught here
and nowhere else. Every command reads with a parser built from a grammar: `summary`, `export`,
`replay` and the live dashboard alike.

How to add
- **A stats field**: one `Field(printed, key, converter, unit)` in the family's `fields`, e.g.
  `Field("#foo-req", "foo_req", INT)` in `DECODE`. Unknown names are ignored, so a server
  that prints it before kdash knows it loses nothing else. Converters are in
  `dash.core.log.convert`, one unit each: `INT` / `COUNT` (>= 0), `FLOAT` (finite, >= 0),
  `RATIO` (a fraction 0..1; a printed `%` is divided by 100, so a percent is never a unit),
  `RATIOS` (a list of them, with `many=True`), `BOOL`. The first field listed for a printed
  name wins; several printed names may feed one key (`npu graph` -> `cuda_graph`).
- **A stats family** (a new periodic line): a `StatsFamily` with its trigger texts, its head
  pattern, fields, required keys (`schema`), the keys every version prints (`expect`: a line
  without one is read but marked incomplete), its item separator (`sep`) and checks; the
  order of `FAMILIES` is the order in which they claim a line. Its `kind` is a record kind.
- **An event phrase**: a `Phrase(event, any=(texts,))` in `dash.core.log.phrases.PHRASES`, where
  it should be tried (the first phrase that reads a line wins), with `examples`. Numbers come
  from `extract`, a function of (message, match) in `dash.core.log.events` (or `failures`), or
  from `fields`; a failure gives its `reason`. A phrase that only has a `pattern` names the
  literal texts the pattern needs in `needs`: the prefilter is built from every phrase's
  literals, and a phrase without any is refused at import.
- **A prefix**: a process tag is one more pattern in `PREFIXES.processes` (group 1 names the
  process and the ranks it prints); a rank tag is one more name in `ranks` (one digit rule for
  all); a collector's or logger's stamp form is an edit of the stamp patterns, whose fields are
  in range. `dash.core.log.prefix` peels them in that order.
"""

from __future__ import annotations

from dash.core.log.convert import BOOL, COUNT, FLOAT, INT, RATIO, RATIOS
from dash.core.log.phrases import PHRASES
from dash.core.log.syntax import Field, Grammar, HeadField, JsonKeys, Prefixes, StatsFamily

_LEVELS = ("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL")

# Stamps name real times: months and days in their ranges, February 29 in leap years only,
# ASCII digits; a bracket of other digits is no stamp (so no record holds an impossible one)
_MONTH_DAY = (r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
              r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-9]))")
_YEAR_DAY = (r"(?:(?:19|20)[0-9]{2}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
             r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
             r"|(?:19(?:[02468][48]|[13579][26])|20(?:[02468][048]|[13579][26]))-02-29)")
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
_DATE = _YEAR_DAY
_ZONE = r"(?:Z|[+-](?:[01][0-9]|2[0-3]):?[0-5][0-9])"
_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
_HOST_IDENT = r"[\w.-]{1,64} [\w.@/-]{1,64}\[[0-9]{1,10}\]: "  # journald / syslog `host ident[pid]: `
# A process's parallel ranks, printed in its name: `Worker_DP1_TP0_EP1`, `VllmWorker TP0`,
# `VllmWorker PP1_TP0`, `EngineCore_DP0`, `VllmWorker rank=3`
_PROC_RANKS = r"(?:rank=[0-9]{1,6}|[A-Z]{2,8}[0-9]{1,6}(?:_[A-Z]{2,8}[0-9]{1,6})*)"

PREFIXES = Prefixes(
    ranks=("DP", "TP", "EP", "PP", "ATTN_CP", "MOE_DP", "PCP", "DCP"),
    rank_digits=r"[0-9]{1,4}",
    levels=_LEVELS,
    bracket_stamp=rf"(?:{_DATE} )?{_TIME}(?:[.,][0-9]{{1,6}})?",
    collector=r"[\w.-]{1,64} +\| ",  # docker compose `service-1  | `
    outer_stamp=rf"{_DATE}T{_TIME}(?:\.[0-9]{{1,9}})?{_ZONE}",
    # after an outer stamp: a CRI log file's stream and tag (`stdout F `), journald's host
    outer_tail=rf"(?:std(?:out|err) [FP] )?(?:{_HOST_IDENT})?",
    syslog_stamp=rf"((?:{_MONTHS}) (?:[ 0-2][0-9]|3[01]) {_TIME}(?:\.[0-9]{{1,6}})?) {_HOST_IDENT}",
    processes=(rf"\((?:([A-Za-z][\w.-]{{0,79}}(?: {_PROC_RANKS})?) )?pid=[0-9]{{1,10}}"
               r"(?:, ip=[^\s)]{1,64})?\) ?",),
    # vLLM 0.33+ prints VLLM_LOGGING_PREFIX before the process tag: `[node-a] (APIServer ...`
    process_lead=r"\[[^\]\s]{1,64}\] ?(?=\()",
    # vLLM 0.9 named its data-parallel engines by number alone (`EngineCore_1`; 0.10+
    # `EngineCore_DP1`): that number is the DP rank
    process_dp=r"EngineCore_([0-9]{1,4})",
    process_engines=(("sgl", "sglang"), ("scheduleractor", "sglang")),
    process_default="vllm",
    # `{VLLM_LOGGING_PREFIX}%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s`
    # (vllm/logger.py): a bracketed tag set in VLLM_LOGGING_PREFIX may come first
    # (a logging config of the same shape with the year in its stamp is no vLLM's)
    vllm=r"(?:\[[^\]\s]{1,64}\] ?)?(DEBUG|INFO|WARNING|ERROR|CRITICAL) "
         rf"((?:{_DATE}|{_MONTH_DAY}) {_TIME})(?:\.[0-9]{{1,6}})? \[?[^\]\s]{{1,200}}:[0-9]+\] ?",
    stamp_first=rf"{_DATE}[ T]{_TIME}(?:[.,][0-9]{{1,9}})?",
    zone=_ZONE,
    gpu_tag=r"\[(gpu(?:_id)?=[0-9]+)\] ",
    # a process's name after the stamp, SGLang's `configure_logger(prefix=...)` of the EPD
    # encoder servers (0.5.13+): `[2026-11-20 10:00:22 encode_dp_worker[3]] `
    bracket_name=r"[a-z_][\w]{0,40}(?:\[[0-9]{1,4}\])?",
    # PyTorch's C++ log lines (c10 logging: ProcessGroupNCCL's watchdog): `[rank7]:[E909
    # 08:45:30.167701534 ProcessGroupNCCL.cpp:2252] `, the month unpadded, the stamp and thread
    # id left out by older releases (`[rank0]:[E ProcessGroupNCCL.cpp:1316] `)
    torch=r"(?:\[rank([0-9]{1,6})\]:)?\[([DIWEF])(?:(0?[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01]) "
          rf"({_TIME})(?:\.[0-9]{{1,9}})?(?: [0-9]{{1,10}})?)? ?[\w./-]{{1,200}}:[0-9]{{1,6}}\] ?",
    # a JSON formatter's line (vLLM 0.33+'s logging config, formatter `json`, python-json-logger's
    # `%(asctime)s %(levelname)s %(name)s %(processName)s %(process)d %(message)s`; SGLang's
    # SGLANG_LOGGING_CONFIG_PATH): the keys that hold each part, the first present wins
    json_keys=JsonKeys(message=("message", "msg"), time=("asctime", "timestamp", "time", "ts"),
                       level=("levelname", "level"), process=("processName", "process_name"),
                       logger=("name", "logger"),
                       engines=(("vllm", "vllm"), ("sglang", "sglang"))),
    # a traceback's source line, which quotes the code that raised or logged (`    raise
    # RuntimeError("Engine core initialization failed. "`): its words are no event
    code_line=r"\s{4,}(?:raise\b|logger\.|logging\.|print\(|f?[\"'])",
    # lines of numbers kdash knows and does not read (no server stats, not to count as
    # unparsed): SGLang's HiCache storage prefetch and backup, LMCache's per-request lookups
    # and vLLM's diffusion decoding (0.34: committed tokens of a canvas, no server load)
    unread=("Prefetch operation ", "Backup to storage ", "LMCache INFO: ", "LMCache hit tokens",
            "DiffusionDecoding metrics"),
    foreign=("INFO:", "WARNING:", "DEBUG:"),
    foreign_phrases=("shutdown",),
)

_GRAPH_FIELDS = (Field("cuda graph", "cuda_graph", BOOL), Field("npu graph", "cuda_graph", BOOL),
                 Field("cpu graph", "cuda_graph", BOOL), Field("musa graph", "cuda_graph", BOOL))
# `XPU KV cache usage` (vLLM 0.33) and any other device's: KV usage in percent, in any family
_KV_USAGE = Field(" KV cache usage", "token_usage", RATIO, suffix=True)
# SGLang 0.5.23+ with the device timer: the share of the log window the GPU was forwarding or
# the scheduler idle (`_ForwardOccupancyLogWindow.log_string`); what is left is its overhead
_FWD_IDLE = Field("fwd+idle occupancy", "fwd_idle_occupancy", RATIO)

DECODE = StatsFamily(
    name="decode", kind="decode", engine="sglang",
    triggers=("Decode batch",), starts=("#running-req",), hints=("gen throughput",),
    head=r"Decode batch(?: ?\[\d+\])?[.,]? ?", head_required=False,
    fields=(
        Field("#running-req", "running_req", INT), Field("#token", "tokens", INT),
        Field("token usage", "token_usage", RATIO),
        Field("gen throughput (token/s)", "gen_throughput", FLOAT),
        Field("#queue-req", "queue_req", INT), Field("#full token", "full_tokens", INT),
        Field("full token usage", "full_token_usage", RATIO),
        Field("#swa token", "swa_tokens", INT), Field("swa token usage", "swa_token_usage", RATIO),
        Field("#gpu token", "gpu_tokens", INT), Field("gpu token usage", "gpu_token_usage", RATIO),
        Field("#cpu token", "cpu_tokens", INT), Field("cpu token usage", "cpu_token_usage", RATIO),
        Field("mamba num", "mamba_num", INT), Field("mamba usage", "mamba_usage", RATIO),
        Field("accept len", "accept_len", FLOAT), Field("accept rate", "accept_rate", RATIO),
        Field("cap len", "cap_len", FLOAT), Field("block accept len", "block_accept_len", FLOAT),
        Field("largest-len", "largest_len", INT),
        Field("pre-allocated usage", "prealloc_usage", RATIO),
        Field("#prealloc-req", "prealloc_req", INT), Field("#transfer-req", "transfer_req", INT),
        Field("#retracted-req", "retracted_req", INT),
        Field("#host-receive-req", "host_receive_req", INT),
        Field("waiting-image-req", "waiting_image_req", INT),
        *_GRAPH_FIELDS,
        Field("timestamp", "timestamp", FLOAT), Field("#cache_miss", "cache_miss", INT),
        Field("fwd occupancy", "fwd_occupancy", RATIO), _FWD_IDLE, _KV_USAGE,
        # `--enable-mfu-metrics` (SGLang 0.5.x): estimated per GPU, like vLLM's `MFU:` line
        Field("est. decode TFLOPS/s (per GPU)", "tflops_per_gpu", FLOAT),
        Field("est. read BW (GB/s per GPU)", "read_gbps_per_gpu", FLOAT),
        Field("est. write BW (GB/s per GPU)", "write_gbps_per_gpu", FLOAT),
    ),
    # hybrid models print `#full token` / `full token usage` instead of `#token` / `token usage`
    fallbacks=(("tokens", "full_tokens"), ("tokens", "gpu_tokens"),
               ("token_usage", "full_token_usage"), ("token_usage", "gpu_token_usage")),
    require_all=("running_req",), require_any=(("tokens", "token_usage"),),
    schema=("running_req", "queue_req", "tokens", "token_usage", "gen_throughput"),
    # `gen throughput` only since 0.1.16
    expect=("running_req", "tokens", "token_usage", "queue_req"),
    examples=("Decode batch, #running-req: 32, #token: 41230, token usage: 0.09, cuda graph: True, "
              "gen throughput (token/s): 2327.27, #queue-req: 0",
              "#running-req: 8, #token: 100, token usage: 0.01, gen throughput (token/s): 5.00, "
              "#queue-req: 0"),
)

PREFILL = StatsFamily(
    name="prefill", kind="prefill", engine="sglang", triggers=("Prefill batch", "Prefil batch"),
    # `Prefil batch.` is 0.1.17's spelling
    head=r"Prefill? batch(?:\(mixed #running-req: (?P<mixed>\d+)\))?(?: ?\[\d+\])?[.,]? ?",
    head_fields=(HeadField("mixed", "running_req", int, fill=True),),
    fields=(
        Field("#new-seq", "new_seq", INT), Field("#new-token", "new_token", INT),
        Field("#cached-token", "cached_token", INT),
        Field("cache hit rate", "cache_hit_rate", RATIO),
        Field("token usage", "token_usage", RATIO), Field("#running-req", "running_req", INT),
        Field("#queue-req", "queue_req", INT), Field("#pending-token", "pending_token", INT),
        Field("input throughput (token/s)", "input_throughput", FLOAT),
        Field("#token", "tokens", INT), Field("full token usage", "full_token_usage", RATIO),
        Field("swa token usage", "swa_token_usage", RATIO),
        Field("mamba usage", "mamba_usage", RATIO), Field("#replay-token", "replay_token", INT),
        Field("#unbootstrapped-req", "unbootstrapped_req", INT),
        Field("#transferring-req", "transferring_req", INT),
        Field("#prealloc-req", "prealloc_req", INT), Field("#inflight-req", "inflight_req", INT),
        Field("#bootstrap-req", "bootstrap_req", INT),
        Field("#optimistic-req", "optimistic_req", INT),
        Field("waiting-image-req", "waiting_image_req", INT),
        *_GRAPH_FIELDS, Field("fwd occupancy", "fwd_occupancy", RATIO), _FWD_IDLE, _KV_USAGE,
        Field("est. prefill TFLOPS/s (per GPU)", "tflops_per_gpu", FLOAT),
    ),
    fallbacks=(("token_usage", "full_token_usage"),),
    require_all=("new_seq", "new_token"),
    schema=("new_seq", "new_token", "cached_token", "token_usage", "running_req", "queue_req"),
    # no `token usage` in 0.2.x, no `#running-req` on a PD prefill server of 0.4.x
    expect=("new_seq", "new_token", "cached_token", "queue_req"),
    examples=("Prefill batch, #new-seq: 1, #new-token: 300, #cached-token: 100, token usage: 0.10, "
              "#running-req: 0, #queue-req: 0",
              "Prefill batch(mixed #running-req: 3). #new-seq: 1, #new-token: 8, "
              "#cached-token: 0, cache hit rate: 0.00%, token usage: 0.01, #queue-req: 0"),
)

VLLM_STATS = StatsFamily(
    name="vllm", kind="decode", engine="vllm", triggers=("Avg prompt throughput",),
    hints=("Avg generation throughput",),
    head=r"(?:Engine (?P<engine>\d+): |(?P<engines>\d+) Engines Aggregated: )?"
         r"(?=Avg prompt throughput: )",
    head_fields=(HeadField("engine", "engine_index", int), HeadField("engines", "engines", int)),
    fields=(
        Field("Avg prompt throughput", "prefill_throughput", FLOAT, " tokens/s"),
        Field("Avg generation throughput", "gen_throughput", FLOAT, " tokens/s"),
        Field("Running", "running_req", COUNT, " reqs"),
        Field("Waiting", "queue_req", COUNT, " reqs"), Field("Pending", "queue_req", COUNT, " reqs"),
        Field("Swapped", "swapped_req", COUNT, " reqs"),
        Field("Deferred", "deferred_req", COUNT, " reqs"),
        Field("Preemptions", "preemptions", COUNT),
        Field("GPU KV cache usage", "token_usage", RATIO),
        Field("CPU KV cache usage", "cpu_kv_usage", RATIO),
        Field("Prefix cache hit rate", "prefix_hit_rate", RATIO),
        Field("External prefix cache hit rate", "external_prefix_hit_rate", RATIO),
        Field("MM cache hit rate", "mm_cache_hit_rate", RATIO),
        Field("Corrupted", "corrupted_req", COUNT, " reqs"), _KV_USAGE,
    ),
    # vLLM 0.33+ on the CPU backend prints `CPU KV cache usage` as its only pool's (V0 printed
    # it beside the GPU's, for the swap space)
    fallbacks=(("token_usage", "cpu_kv_usage"),),
    require_any=(("gen_throughput", "running_req"),),
    schema=("running_req", "queue_req", "tokens", "token_usage", "gen_throughput"),
    expect=("prefill_throughput", "gen_throughput", "running_req", "queue_req", "token_usage"),
    examples=("Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 "
              "tokens/s, Running: 3 reqs, Waiting: 4 reqs, GPU KV cache usage: 5.0%",
              "Engine 000: Avg prompt throughput: 120.0 tokens/s, Avg generation throughput: 45.0 "
              "tokens/s, Running: 4 reqs, Waiting: 0 reqs, CPU KV cache usage: 62.5%"),
)

PREFILL_V01 = StatsFamily(
    # SGLang 0.1.3-0.1.16: `new fill batch. #seq: 2. #cached_token: 512. #new_token: 40.
    # #remaining_req: 6. #running_req: 3. tree_cache_hit_rate: 71.20%.` (items end in ". ")
    name="prefill_v01", kind="prefill", engine="sglang", triggers=("new fill batch",),
    head=r"new fill batch\. ", sep=". ",
    fields=(
        Field("#seq", "new_seq", COUNT), Field("#cached_token", "cached_token", COUNT),
        Field("#new_token", "new_token", COUNT), Field("#remaining_req", "queue_req", COUNT),
        Field("#running_req", "running_req", COUNT),
        Field("tree_cache_hit_rate", "cache_hit_rate", RATIO),
    ),
    require_all=("new_seq", "new_token"),
    schema=PREFILL.schema,
    expect=("new_seq", "cached_token", "new_token", "queue_req", "running_req"),
    examples=("new fill batch. #seq: 2. #cached_token: 512. #new_token: 40. #remaining_req: 6. "
              "#running_req: 3. tree_cache_hit_rate: 71.20%.",),
)

SPEC = StatsFamily(
    # vLLM's speculative decoding, after each engine's stats line: V1 0.10.2+ (`Mean acceptance
    # length` first), V1 0.8.5-0.10.1 (`Draft acceptance rate: x%` first), V0 (`Speculative
    # metrics:`, rates as fractions); `Per-position acceptance rate` is a list
    name="spec", kind="spec", engine="vllm",
    triggers=("SpecDecoding metrics", "Speculative metrics"),
    head=r"(?:Engine (?P<engine>\d+): )?(?:SpecDecoding|Speculative) metrics: ",
    head_fields=(HeadField("engine", "engine_index", int),),
    fields=(
        Field("Mean acceptance length", "accept_len", FLOAT),
        Field("Accepted throughput", "accepted_throughput", FLOAT, " tokens/s"),
        Field("Drafted throughput", "drafted_throughput", FLOAT, " tokens/s"),
        Field("Accepted", "accepted_tokens", COUNT, " tokens"),
        Field("Drafted", "drafted_tokens", COUNT, " tokens"),
        Field("Rejected", "rejected_tokens", COUNT, " tokens"),
        Field("Per-position acceptance rate", "accept_rate_per_pos", RATIOS, many=True),
        Field("Avg Draft acceptance rate", "accept_rate", RATIO),
        Field("Draft acceptance rate", "accept_rate", RATIO),
        Field("System efficiency", "system_efficiency", RATIO),
        Field("Number of speculative tokens", "num_spec_tokens", COUNT),
        Field("Number of accepted tokens", "accepted_tokens", COUNT),
        Field("Number of draft tokens", "drafted_tokens", COUNT),
        Field("Number of emitted tokens", "emitted_tokens", COUNT),
    ),
    # V0 before anything was drafted prints `nan` rates (no value): its token counts still say so
    require_any=(("accept_len", "accept_rate", "drafted_tokens"),),
    schema=("accept_len", "accept_rate", "accepted_tokens", "drafted_tokens"),
    expect=("accept_rate", "accepted_tokens", "drafted_tokens"),
    examples=("SpecDecoding metrics: Mean acceptance length: 3.14, Accepted throughput: 142.40 "
              "tokens/s, Drafted throughput: 200.00 tokens/s, Accepted: 1424 tokens, Drafted: "
              "2000 tokens, Per-position acceptance rate: 0.812, 0.703, 0.621, Avg Draft "
              "acceptance rate: 71.2%",),
)

MFU = StatsFamily(
    # vLLM 0.14+ with --enable-mfu-metrics: achieved TFLOP/s and GB/s per GPU (not a percent)
    name="mfu", kind="mfu", engine="vllm", triggers=("MFU: ",),
    head=r"(?:Engine (?P<engine>\d+): )?MFU: (?P<tflops>[0-9.]+) TF/s/(?:GPU|device) "
         r"(?P<gbps>[0-9.]+) GB/s/(?:GPU|device)",
    head_fields=(HeadField("engine", "engine_index", int),
                 HeadField("tflops", "tflops_per_gpu", FLOAT.read),
                 HeadField("gbps", "gbps_per_gpu", FLOAT.read)),
    fields=(),
    require_all=("tflops_per_gpu",),
    schema=("tflops_per_gpu", "gbps_per_gpu"),
    expect=("tflops_per_gpu", "gbps_per_gpu"),
    examples=("Engine 000: MFU: 312.4 TF/s/GPU 1520.3 GB/s/GPU",),
)

PREFIX_CACHE_V0 = StatsFamily(
    # vLLM V0 with prefix caching: its own line after each stats line (`metrics.py`:
    # `Prefix cache hit rate: GPU: %.2f%%, CPU: %.2f%%`); V1 prints the rate in the stats line
    name="prefix_cache_v0", kind="cache", engine="vllm", triggers=("Prefix cache hit rate: GPU",),
    head=r"Prefix cache hit rate: (?=GPU: )",
    fields=(Field("GPU", "prefix_hit_rate", RATIO), Field("CPU", "cpu_prefix_hit_rate", RATIO)),
    require_all=("prefix_hit_rate",),
    schema=("prefix_hit_rate", "cpu_prefix_hit_rate"),
    expect=("prefix_hit_rate", "cpu_prefix_hit_rate"),
    examples=("Prefix cache hit rate: GPU: 45.20%, CPU: 0.00%",),
)

ITERATION = StatsFamily(
    # vLLM 0.3x with --enable-logging-iteration-details: a line for every engine step
    # (`vllm/v1/metrics/loggers.py`, `_log_iteration_details`): "%sIteration(%d): %d context
    # requests, %d context tokens, %d generation requests, %d generation tokens, iteration
    # elapsed time: %.2f ms%s, %s KV cache usage: %.1f%%%s". Its numbers come before their
    # names, so the head reads them; kept as its own kind (export), not as a stats line
    name="iteration", kind="iteration", engine="vllm", triggers=("Iteration(",),
    head=r"(?:Engine (?P<engine>\d+): )?Iteration\((?P<step>\d+)\): (?P<ctx_req>\d+) context "
         r"requests, (?P<ctx_tok>\d+) context tokens, (?P<gen_req>\d+) generation requests, "
         r"(?P<gen_tok>\d+) generation tokens, iteration elapsed time: (?P<ms>[0-9.]+) ms"
         r"(?P<dummy> \(dummy\))?, ",
    head_fields=(HeadField("engine", "engine_index", int), HeadField("step", "iteration", int),
                 HeadField("ctx_req", "context_req", int),
                 HeadField("ctx_tok", "context_tokens", int),
                 HeadField("gen_req", "generation_req", int),
                 HeadField("gen_tok", "generation_tokens", int),
                 HeadField("ms", "elapsed_ms", FLOAT.read),
                 HeadField("dummy", "dummy", bool)),
    fields=(_KV_USAGE, Field("encoder inputs", "encoder_inputs", COUNT),
            Field("encoder output embeddings", "encoder_output_tokens", COUNT)),
    require_all=("iteration", "elapsed_ms"),
    schema=("iteration", "context_req", "context_tokens", "generation_req", "generation_tokens",
            "elapsed_ms", "token_usage"),
    expect=("token_usage",),
    examples=("Engine 000: Iteration(1234): 2 context requests, 4096 context tokens, 30 "
              "generation requests, 30 generation tokens, iteration elapsed time: 45.20 ms, "
              "GPU KV cache usage: 33.0%",),
)

FAMILIES = (DECODE, PREFILL, VLLM_STATS, PREFILL_V01, SPEC, MFU, PREFIX_CACHE_V0, ITERATION)

GRAMMAR = Grammar(PREFIXES, FAMILIES, PHRASES)
