"""What kdash reads in a server log, in one place: prefixes, stats families, event phrases.

`GRAMMAR` below is the only description of the log formats. The per-line parser
(`dash.core.log.parser.LineParser`), its keyword prefilter, the lines the bulk reader skips
unread and the bulk reader's compiled shapes (`dash.core.log.bulk`) are all derived from it, so
a new shape is taught here and nowhere else. Every command reads with a parser built from a
grammar: `summary`, `export`, `replay` and the live dashboard alike.

How to add
- **A stats field**: one `Field(printed, key, converter, unit)` in the family's `fields`, e.g.
  `Field("#foo-req", "foo_req", INT)` in `DECODE`. Unknown names are ignored, so a server
  that prints it before kdash knows it loses nothing else. Converters are in
  `dash.core.log.convert` (`INT`, `FLOAT`, `COUNT`, `BOOL`, `PERCENT`; a ratio printed in
  percent is stored as a fraction). The first field listed for a printed name wins; several
  printed names may feed one key (`npu graph` -> `cuda_graph`), the first printed wins.
- **A stats family** (a new periodic line): a `StatsFamily` with its trigger texts, its head
  pattern, fields, required keys (`schema`) and checks; the order of `FAMILIES` is the order in
  which they claim a line.
- **An event phrase**: a `Phrase(event, any=(texts,))` in `PHRASES`, where it should be tried
  (the first phrase that reads a line wins), with `examples`. Numbers come from `extract`, a
  function of (message, match) in `dash.core.log.events`, or from `fields`. A phrase that
  only has a `pattern` names the literal texts the pattern needs in `needs`: the prefilter is
  built from every phrase's literals, and a phrase without any is refused at import.
- **A prefix**: a process tag is one more pattern in `PREFIXES.processes` (group 1 names the
  process); a rank tag is one more name in `ranks` (one digit rule for all); a stamp form is
  an edit of the stamp patterns. `dash.core.log.prefix` peels them in that order.
"""

from __future__ import annotations

from dash.core.log import events as ev
from dash.core.log.convert import BOOL, COUNT, FLOAT, INT, PERCENT
from dash.core.log.syntax import Field, Grammar, HeadField, Phrase, Prefixes, StatsFamily

_LEVELS = ("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL")

PREFIXES = Prefixes(
    ranks=("DP", "TP", "EP", "PP", "ATTN_CP", "MOE_DP"),
    rank_digits=r"\d{1,4}",
    levels=_LEVELS,
    bracket_stamp=r"(?:\d{4}-\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?",
    outer_stamp=r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})",
    processes=(r"\(([\w.-]{1,80}) pid=\d+(?:, ip=[\w.:]{1,64})?\) ?",),
    process_engines=(("sgl", "sglang"),),
    process_default="vllm",
    vllm=r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.\d{1,6})? "
         r"\[?[^\]\s]{1,200}:\d+\] ?",
    stamp_first=r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?",
    gpu_tag=r"\[(gpu(?:_id)?=\d+)\] ",
    foreign=("INFO:", "WARNING:", "DEBUG:"),
    foreign_phrases=("shutdown",),
)

_GRAPH_FIELDS = (Field("cuda graph", "cuda_graph", BOOL), Field("npu graph", "cuda_graph", BOOL),
                 Field("cpu graph", "cuda_graph", BOOL), Field("musa graph", "cuda_graph", BOOL))
# `XPU KV cache usage` (vLLM 0.33) and any other device's: KV usage in percent, in any family
_KV_USAGE = Field(" KV cache usage", "token_usage", PERCENT, "%", suffix=True)

DECODE = StatsFamily(
    name="decode", kind="decode", engine="sglang",
    triggers=("Decode batch",), starts=("#running-req",), hints=("gen throughput",),
    head=r"Decode batch(?: ?\[\d+\])?[.,]? ?", head_required=False,
    fields=(
        Field("#running-req", "running_req", INT), Field("#token", "tokens", INT),
        Field("token usage", "token_usage", FLOAT),
        Field("gen throughput (token/s)", "gen_throughput", FLOAT),
        Field("#queue-req", "queue_req", INT), Field("#full token", "full_tokens", INT),
        Field("full token usage", "full_token_usage", FLOAT),
        Field("#swa token", "swa_tokens", INT), Field("swa token usage", "swa_token_usage", FLOAT),
        Field("#gpu token", "gpu_tokens", INT), Field("gpu token usage", "gpu_token_usage", FLOAT),
        Field("#cpu token", "cpu_tokens", INT), Field("cpu token usage", "cpu_token_usage", FLOAT),
        Field("mamba num", "mamba_num", INT), Field("mamba usage", "mamba_usage", FLOAT),
        Field("accept len", "accept_len", FLOAT), Field("accept rate", "accept_rate", FLOAT),
        Field("cap len", "cap_len", FLOAT), Field("block accept len", "block_accept_len", FLOAT),
        Field("largest-len", "largest_len", INT),
        Field("pre-allocated usage", "prealloc_usage", FLOAT),
        Field("#prealloc-req", "prealloc_req", INT), Field("#transfer-req", "transfer_req", INT),
        Field("#retracted-req", "retracted_req", INT),
        Field("#host-receive-req", "host_receive_req", INT),
        Field("waiting-image-req", "waiting_image_req", INT),
        *_GRAPH_FIELDS,
        Field("timestamp", "timestamp", FLOAT), Field("#cache_miss", "cache_miss", INT),
        Field("fwd occupancy", "fwd_occupancy", FLOAT), _KV_USAGE,
    ),
    # hybrid models print `#full token` / `full token usage` instead of `#token` / `token usage`
    fallbacks=(("tokens", "full_tokens"), ("tokens", "gpu_tokens"),
               ("token_usage", "full_token_usage"), ("token_usage", "gpu_token_usage")),
    require_all=("running_req",), require_any=(("tokens", "token_usage"),),
    schema=("running_req", "queue_req", "tokens", "token_usage", "gen_throughput"),
    examples=("Decode batch, #running-req: 32, #token: 41230, token usage: 0.09, cuda graph: True, "
              "gen throughput (token/s): 2327.27, #queue-req: 0",
              "#running-req: 8, #token: 100, token usage: 0.01, gen throughput (token/s): 5.00"),
)

PREFILL = StatsFamily(
    name="prefill", kind="prefill", engine="sglang", triggers=("Prefill batch",),
    head=r"Prefill batch(?:\(mixed #running-req: (?P<mixed>\d+)\))?(?: ?\[\d+\])?[.,]? ?",
    head_fields=(HeadField("mixed", "running_req", int, fill=True),),
    fields=(
        Field("#new-seq", "new_seq", INT), Field("#new-token", "new_token", INT),
        Field("#cached-token", "cached_token", INT),
        Field("cache hit rate", "cache_hit_rate", FLOAT),
        Field("token usage", "token_usage", FLOAT), Field("#running-req", "running_req", INT),
        Field("#queue-req", "queue_req", INT), Field("#pending-token", "pending_token", INT),
        Field("input throughput (token/s)", "input_throughput", FLOAT),
        Field("#token", "tokens", INT), Field("full token usage", "full_token_usage", FLOAT),
        Field("swa token usage", "swa_token_usage", FLOAT),
        Field("mamba usage", "mamba_usage", FLOAT), Field("#replay-token", "replay_token", INT),
        Field("#unbootstrapped-req", "unbootstrapped_req", INT),
        Field("#transferring-req", "transferring_req", INT),
        Field("#prealloc-req", "prealloc_req", INT), Field("#inflight-req", "inflight_req", INT),
        Field("#bootstrap-req", "bootstrap_req", INT),
        Field("#optimistic-req", "optimistic_req", INT),
        Field("waiting-image-req", "waiting_image_req", INT),
        *_GRAPH_FIELDS, Field("fwd occupancy", "fwd_occupancy", FLOAT), _KV_USAGE,
    ),
    fallbacks=(("token_usage", "full_token_usage"),),
    require_all=("new_seq", "new_token"),
    schema=("new_seq", "new_token", "cached_token", "token_usage", "running_req", "queue_req"),
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
        Field("GPU KV cache usage", "token_usage", PERCENT, "%"),
        Field("CPU KV cache usage", "cpu_kv_usage", PERCENT, "%"),
        Field("Prefix cache hit rate", "prefix_hit_rate", FLOAT, "%"),
        Field("External prefix cache hit rate", "external_prefix_hit_rate", FLOAT, "%"),
        Field("MM cache hit rate", "mm_cache_hit_rate", FLOAT, "%"),
        Field("Corrupted", "corrupted_req", COUNT, " reqs"), _KV_USAGE,
    ),
    require_any=(("gen_throughput", "running_req"),),
    schema=("running_req", "queue_req", "tokens", "token_usage", "gen_throughput"),
    examples=("Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 "
              "tokens/s, Running: 3 reqs, Waiting: 4 reqs, GPU KV cache usage: 5.0%",),
)

FAMILIES = (DECODE, PREFILL, VLLM_STATS)

_SHUTDOWN = Phrase("shutdown", any=("SIGTERM received", "Shutting down", "Finished server process"),
                   examples=("INFO:     Shutting down",))

# Tried in this order; the first that reads a line wins. Matched on message text, never on
# level or prefix alone: SGLang prints no level, and a WARNING or ERROR line looks like an
# INFO line (reference/log-formats.md sections 5 and 8).
PHRASES = (
    Phrase("server_args", any=("server_args=", "non-default args: {"), starts=("ServerArgs(",),
           extract=ev.server_args, examples=("server_args=ServerArgs(model_path='m', tp_size=2)",)),
    Phrase("retract", any=("Decode out of memory happened", "Retract requests",
                           "Testing retraction"), extract=ev.retract,
           examples=("KV cache pool is full. Retract requests. #retracted_reqs: 2, "
                     "#new_token_ratio: 0.4000 -> 0.5322",)),
    Phrase("retract", every=("preempted", "KV cache space"), extract=ev.retract,
           examples=("Sequence group 3 is preempted by PreemptionMode.RECOMPUTE mode because "
                     "there is not enough KV cache space.",)),
    Phrase("oom", any=("CUDA out of memory", "OutOfMemoryError", "CUDA error: out of memory",
                       "NPU out of memory", "out of memory. Try to lower",
                       "Not enough memory. Please try", "runs out of memory"),
           examples=("torch.OutOfMemoryError: CUDA out of memory.",)),
    Phrase("crash", any=("Scheduler hit an exception", "Exception in ModelTpServer",
                         "Exception in run_tp_server", "Exception in ControllerSingle",
                         "crashed with exit code", "EngineCore encountered a fatal",
                         "died unexpectedly"), fields={"reason": "exception"},
           examples=("Scheduler hit an exception: Traceback",)),
    Phrase("crash", any=("atchdog timeout",), extract=ev.watchdog,
           examples=("Watchdog timeout (self.watchdog_timeout=300)",)),
    Phrase("crash", any=("Received sigquit", "SIGQUIT received"), fields={"reason": "sigquit"},
           examples=("Received sigquit from a child process. It usually means the child failed.",)),
    Phrase("crash", pattern=r"^(?:.{0,200}: line \d+: +\d+ )?Killed(?:\s|$)", needs=("Killed",),
           fields={"reason": "killed"}, examples=("Killed", "run.sh: line 3: 4242 Killed  python")),
    Phrase("kv_cache", any=("KV Cache is allocated", "KV Cache VA upper bound"),
           extract=ev.kv_cache,
           examples=("KV Cache is allocated. #tokens: 463000, K size: 28.26 GB, V size: 28.26 GB",)),
    Phrase("kv_cache", any=("max_total_num_tokens=",), extract=ev.capacity,
           examples=("max_total_num_tokens=463000, max_prefill_tokens=16384",)),
    Phrase("kv_cache", any=("blocks: ", "GPU KV cache size", "Maximum concurrency"),
           extract=ev.vllm_capacity,
           examples=("# GPU blocks: 5691, # CPU blocks: 2048", "GPU KV cache size: 1,234 tokens")),
    Phrase("cuda_graph", any=("Capture ",),
           pattern=r"Capture (?:([\w -]{1,40}?) )?(?:cuda|CUDA|npu|NPU|cpu|CPU|xpu|XPU|musa|MUSA)"
                   r" graph (begin|end)\b", extract=ev.graph,
           examples=("Capture cuda graph end. Time elapsed: 9.81 s. avail mem=5.59 GB.",)),
    Phrase("load_weights", any=("Load weight end",), extract=ev.memory,
           examples=("Load weight end. type=X, avail mem=63.41 GB, mem usage=15.12 GB.",)),
    Phrase("load_weights", pattern=r"(?:Loading model weights|Model loading) took ([\d.]+) ?Gi?B",
           needs=("Loading model weights", "Model loading"), extract=ev.weights_taken,
           examples=("Loading model weights took 14.9595 GB",)),
    Phrase("ready", any=("ready to roll", "Starting vLLM API server"),
           examples=("The server is fired up and ready to roll!",)),
    _SHUTDOWN,
    Phrase("error", starts=("Traceback (most recent call last)", "ERROR:"),
           examples=("Traceback (most recent call last):",)),
    Phrase("error", pattern=r"^[A-Za-z_][\w.]{0,200}(?:Error|Exception|Exit|Interrupt)(?::|$)",
           needs=("Error", "Exception", "Exit", "Interrupt"),
           examples=("ValueError: bad", "KeyboardInterrupt")),
    Phrase("error", any=("Health check failed",), examples=("Health check failed",)),
    Phrase("error", levels=("ERROR", "CRITICAL", "FATAL"),
           examples=("engine died",)),  # after a prefix that prints ERROR
)

GRAMMAR = Grammar(PREFIXES, FAMILIES, PHRASES)
