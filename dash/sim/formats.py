"""SGLang log-line formats, written from the reference notes (never through kdash's parser).

Four families, picked by `log_format`:

- `0.5.19`: as 0.5.12, with the arguments printed as a dict (`server_args={...}`), the KV pool
  line naming its dtype (`KV Cache is allocated. dtype: torch.bfloat16, ...`, 0.5.13+) and the
  HiCache host pool line of 0.5.17+ (`Allocating full hierarchical KV host pool: ...`).
- `0.5.12` (default, alias `current`): `Decode batch, ...` with no trailing comma, prefill lines
  with `#pending-token`, `cuda graph` and `input throughput`; rank tags only when a dimension > 1;
  `server_args=ServerArgs(...)`.
- `0.4.10`: `Decode batch. ...` with `cuda graph` and a trailing `", "`; `KV cache pool is full`.
- `0.4.3`: `Decode batch. ...` with `largest-len: 0` and a trailing `", "`, every scheduler line
  tagged ` TP{n}` (even at tp 1), `Decode out of memory happened.` retractions.

Every method returns the message text without the `[...]` prefix; `prefix()` adds it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

FAMILIES = ("0.5.12", "0.5.19", "0.4.10", "0.4.3")
ALIASES = {"current": "0.5.12", "0.5": "0.5.12", "0.4": "0.4.3"}

_SITE = "/usr/local/lib/python3.12/dist-packages"
_TORCH_DTYPES = {"auto": "torch.bfloat16", "bf16": "torch.bfloat16", "bfloat16": "torch.bfloat16",
                 "fp8_e4m3": "torch.float8_e4m3fn", "fp8_e5m2": "torch.float8_e5m2"}
KV_BYTES_PER_TOKEN = {"torch.bfloat16": 70272, "torch.float8_e4m3fn": 35136,
                      "torch.float8_e5m2": 35136}
"""DeepSeek-V3's MLA cache: (512 + 64) values x 61 layers, 2 bytes each in bf16, 1 in fp8."""


def resolve_family(name: str) -> str:
    """The canonical family name for `name`, or ValueError listing the choices."""
    family = ALIASES.get(name, name)
    if family not in FAMILIES:
        choices = ", ".join(FAMILIES + tuple(ALIASES))
        raise ValueError(f"unknown log format {name!r} (choose from {choices})")
    return family


@dataclass(frozen=True, slots=True)
class LogFormat:
    """Builds the lines one SGLang version prints."""

    family: str = "0.5.12"

    @property
    def legacy(self) -> bool:
        """True for the 0.4.x families (period heads, trailing comma)."""
        return self.family not in ("0.5.12", "0.5.19")

    @property
    def current(self) -> str:
        """The 0.5.x family these lines follow for everything but startup details."""
        return "0.5.12" if not self.legacy else self.family

    # -- prefix ------------------------------------------------------------------------------
    def prefix(self, epoch: float, tp_rank: int | None, tp_size: int,
               dp_size: int = 1) -> str:
        """`[YYYY-MM-DD HH:MM:SS TP0] `; main-process lines pass tp_rank=None (no tag). With DP
        attention (`dp_size` > 1) every scheduler is `DP{d} TP{t} EP{t}`, `d = t // (tp / dp)`
        (SGLang's `configure_scheduler_process` order: DP, TP, EP)."""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
        tag = ""
        if tp_rank is not None and dp_size > 1:
            tag = f" DP{tp_rank // (tp_size // dp_size)} TP{tp_rank} EP{tp_rank}"
        elif tp_rank is not None and (tp_size > 1 or self.family == "0.4.3"):
            tag = f" TP{tp_rank}"
        return f"[{stamp}{tag}] "

    # -- scheduler stats ---------------------------------------------------------------------
    def decode(self, running: int, tokens: int, usage: float, gen: float, queue: int) -> str:
        """The periodic decode-stats line (every 40 decode steps)."""
        if self.current == "0.5.12":
            return (f"Decode batch, #running-req: {running}, #token: {tokens}, "
                    f"token usage: {usage:.2f}, cuda graph: True, "
                    f"gen throughput (token/s): {gen:.2f}, #queue-req: {queue}")
        if self.family == "0.4.10":
            return (f"Decode batch. #running-req: {running}, #token: {tokens}, "
                    f"token usage: {usage:.2f}, cuda graph: True, "
                    f"gen throughput (token/s): {gen:.2f}, #queue-req: {queue}, ")
        return (f"Decode batch. #running-req: {running}, #token: {tokens}, "
                f"token usage: {usage:.2f}, gen throughput (token/s): {gen:.2f}, "
                f"largest-len: 0, #queue-req: {queue}, ")

    def prefill(self, new_seq: int, new_tok: int, cached: int, usage: float, running: int,
                queue: int, pending: int, input_tps: float) -> str:
        """One prefill batch."""
        head = (f"#new-seq: {new_seq}, #new-token: {new_tok}, #cached-token: {cached}, "
                f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queue}, ")
        if self.current == "0.5.12":
            return (f"Prefill batch, {head}#pending-token: {pending}, cuda graph: False, "
                    f"input throughput (token/s): {input_tps:.2f}")
        return f"Prefill batch. {head}"

    def retract(self, n: int, gained: int, old: float, new: float) -> str:
        """A retraction: the KV pool filled up and running requests went back to the queue."""
        if self.current == "0.5.12":
            return (f"KV cache pool is full. Retract requests. #retracted_reqs: {n}, "
                    f"#new_tokens_gained: {gained}, #new_token_ratio: {old:.4f} -> {new:.4f}")
        if self.family == "0.4.10":
            return (f"KV cache pool is full. Retract requests. #retracted_reqs: {n}, "
                    f"#new_token_ratio: {old:.4f} -> {new:.4f}")
        return f"Decode out of memory happened. #retracted_reqs: {n}, #new_token_ratio: {old:.4f} -> {new:.4f}"

    # -- startup -----------------------------------------------------------------------------
    def server_args(self, model: str, tp: int, mem_fraction: float, kv_dtype: str,
                    max_running: int, context: int, port: int, hicache_gb: float = 0.0,
                    dp: int = 1) -> str:
        """The one long arguments line: `server_args=ServerArgs(...)`, or a dict (0.5.19+)."""
        pairs: list[tuple[str, object]] = [
            ("model_path", model), ("tokenizer_path", model), ("tokenizer_mode", "auto"),
            ("skip_tokenizer_init", False), ("load_format", "auto"), ("trust_remote_code", True),
            ("dtype", "auto"), ("kv_cache_dtype", kv_dtype), ("quantization", None),
            ("context_length", context), ("device", "cuda"), ("served_model_name", model),
            ("chat_template", None), ("is_embedding", False), ("host", "127.0.0.1"),
            ("port", port), ("mem_fraction_static", mem_fraction),
            ("max_running_requests", max_running), ("max_total_tokens", None),
            ("chunked_prefill_size", 8192), ("max_prefill_tokens", 16384),
            ("schedule_policy", "fcfs"), ("schedule_conservativeness", 1.0), ("tp_size", tp),
            ("stream_interval", 1), ("random_seed", 42), ("log_level", "info"),
            ("log_requests", False), ("show_time_cost", False), ("enable_metrics", True),
            ("decode_log_interval", 40), ("dp_size", dp), ("load_balance_method", "round_robin"),
            ("enable_dp_attention", dp > 1), ("disable_radix_cache", False),
            ("disable_cuda_graph", False), ("enable_torch_compile", False),
            ("enable_hierarchical_cache", hicache_gb > 0), ("hicache_ratio", 2.0),
            ("hicache_size", int(hicache_gb) if hicache_gb == int(hicache_gb) else hicache_gb),
            ("watchdog_timeout", 300)]
        if self.family == "0.5.19":
            return "server_args={" + ", ".join(f"{k!r}: {v!r}" for k, v in pairs) + "}"
        return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in pairs) + ")"

    def load_weight_begin(self, avail: float) -> str:
        return f"Load weight begin. avail mem={avail:.2f} GB"

    def load_weight_end(self, model_type: str, avail: float, usage: float, elapsed: float) -> str:
        if self.current == "0.5.12":
            return (f"Load weight end. elapsed={elapsed:.2f} s, type={model_type}, "
                    f"quant=fp8, fmt=e4m3, avail mem={avail:.2f} GB, mem usage={usage:.2f} GB.")
        return (f"Load weight end. type={model_type}, dtype=torch.bfloat16, "
                f"avail mem={avail:.2f} GB, mem usage={usage:.2f} GB.")

    def kv_allocated(self, tokens: int, k_gb: float, v_gb: float, kv_dtype: str = "auto") -> str:
        dtype = ""
        if self.family == "0.5.19":
            dtype = f"dtype: {_TORCH_DTYPES.get(kv_dtype, 'torch.bfloat16')}, "
        return (f"KV Cache is allocated. {dtype}#tokens: {tokens}, K size: {k_gb:.2f} GB, "
                f"V size: {v_gb:.2f} GB")

    def hicache_host(self, host_gb: float, kv_dtype: str = "auto") -> str:
        """The hierarchical cache's host pool, once per scheduler (`--hicache-size` GB)."""
        if self.family != "0.5.19":
            return f"Allocating {host_gb:.2f} GB host memory for hierarchical KV cache."
        per_token = KV_BYTES_PER_TOKEN[_TORCH_DTYPES.get(kv_dtype, "torch.bfloat16")]
        tokens = int(host_gb * 1e9 // per_token)
        return (f"Allocating full hierarchical KV host pool: {tokens} tokens, {host_gb:.2f} GB "
                "host memory.")

    def memory_pool_end(self, avail: float) -> str:
        return f"Memory pool end. avail mem={avail:.2f} GB"

    def graph_begin(self, avail: float) -> str:
        return f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail:.2f} GB"

    def graph_end(self, elapsed: float, usage: float, avail: float) -> str:
        if self.family == "0.4.3":
            return (f"Capture cuda graph end. Time elapsed: {elapsed:.2f} s. "
                    f"avail mem={avail:.2f} GB. mem usage={usage:.2f} GB.")
        return (f"Capture cuda graph end. Time elapsed: {elapsed:.2f} s. "
                f"mem usage={usage:.2f} GB. avail mem={avail:.2f} GB.")

    def capacity(self, tokens: int, max_running: int, context: int, avail: float) -> str:
        """The `max_total_num_tokens=...` line (no available_gpu_mem before 0.4.7)."""
        text = (f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, "
                f"max_prefill_tokens=16384, max_running_requests={max_running}, "
                f"context_len={context}")
        if self.family == "0.4.3":
            return text
        return f"{text}, available_gpu_mem={avail:.2f} GB"

    @staticmethod
    def uvicorn_startup(pid: int, port: int) -> list[str]:
        return [f"INFO:     Started server process [{pid}]",
                "INFO:     Waiting for application startup.",
                "INFO:     Application startup complete.",
                f"INFO:     Uvicorn running on http://127.0.0.1:{port} (Press CTRL+C to quit)"]

    @staticmethod
    def access(client_port: int, method: str, path: str, status: str = "200 OK") -> str:
        """A uvicorn access line (the `[...]` prefix comes from SGLang's uvicorn config)."""
        return f'INFO:     127.0.0.1:{client_port} - "{method} {path} HTTP/1.1" {status}'

    def model_info_path(self) -> str:
        return "/model_info" if self.current == "0.5.12" else "/get_model_info"

    @staticmethod
    def ready() -> str:
        return "The server is fired up and ready to roll!"

    # -- failures ----------------------------------------------------------------------------
    def oom_traceback(self, tried_gib: float, total_gib: float, free_mib: float) -> list[str]:
        """`Scheduler hit an exception:` and the raw traceback lines (no prefix after the first)."""
        sched = f"{_SITE}/sglang/srt/managers/scheduler.py"
        runner = f"{_SITE}/sglang/srt/model_executor/model_runner.py"
        in_use = total_gib - free_mib / 1024
        return [
            "Scheduler hit an exception: Traceback (most recent call last):",
            f'  File "{sched}", line 2713, in run_scheduler_process',
            "    scheduler.event_loop_overlap()",
            f'  File "{_SITE}/torch/utils/_contextlib.py", line 116, in decorate_context',
            "    return func(*args, **kwargs)",
            "           ^^^^^^^^^^^^^^^^^^^^^",
            f'  File "{sched}", line 1012, in event_loop_overlap',
            "    batch_result = self.run_batch(batch)",
            "                   ^^^^^^^^^^^^^^^^^^^^^",
            f'  File "{runner}", line 1750, in forward_extend',
            "    return self.model.forward(",
            "           ^^^^^^^^^^^^^^^^^^^",
            f'  File "{_SITE}/torch/nn/modules/module.py", line 1762, in _call_impl',
            "    return forward_call(*args, **kwargs)",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried_gib:.2f} GiB. "
             f"GPU 0 has a total capacity of {total_gib:.2f} GiB of which {free_mib:.2f} MiB is free. "
             f"Including non-PyTorch memory, this process has {in_use:.2f} GiB memory in use. "
             f"Of the allocated memory {in_use - 2.31:.2f} GiB is allocated by PyTorch, and 2.31 GiB "
             "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
             "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
             "See documentation for Memory Management  "
             "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"),
            "",
        ]

    def sigquit(self) -> str:
        """What the parent prints when a scheduler child died."""
        if self.current == "0.5.12":
            return "SIGQUIT received. signum=3, frame=None. It usually means one child failed."
        return "Received sigquit from a child process. It usually means the child failed."

    def sigterm(self) -> str:
        """The operator stopped the server (0.5.x prints this; older ones print nothing)."""
        return "SIGTERM received. signum=15 frame=None. Draining requests and shutting down..."
