"""SGLang log-line formats, written from the reference notes (never through kdash's parser).

Three families, picked by `log_format`:

- `0.5.12` (default, alias `current`): `Decode batch, ...` with no trailing comma, prefill lines
  with `#pending-token`, `cuda graph` and `input throughput`; rank tags only when a dimension > 1.
- `0.4.10`: `Decode batch. ...` with `cuda graph` and a trailing `", "`; `KV cache pool is full`.
- `0.4.3`: `Decode batch. ...` with `largest-len: 0` and a trailing `", "`, every scheduler line
  tagged ` TP{n}` (even at tp 1), `Decode out of memory happened.` retractions.

Every method returns the message text without the `[...]` prefix; `prefix()` adds it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

FAMILIES = ("0.5.12", "0.4.10", "0.4.3")
ALIASES = {"current": "0.5.12", "0.5": "0.5.12", "0.4": "0.4.3"}

_SITE = "/usr/local/lib/python3.12/dist-packages"


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
        return self.family != "0.5.12"

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
        if self.family == "0.5.12":
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
        if self.family == "0.5.12":
            return (f"Prefill batch, {head}#pending-token: {pending}, cuda graph: False, "
                    f"input throughput (token/s): {input_tps:.2f}")
        return f"Prefill batch. {head}"

    def retract(self, n: int, gained: int, old: float, new: float) -> str:
        """A retraction: the KV pool filled up and running requests went back to the queue."""
        if self.family == "0.5.12":
            return (f"KV cache pool is full. Retract requests. #retracted_reqs: {n}, "
                    f"#new_tokens_gained: {gained}, #new_token_ratio: {old:.4f} -> {new:.4f}")
        if self.family == "0.4.10":
            return (f"KV cache pool is full. Retract requests. #retracted_reqs: {n}, "
                    f"#new_token_ratio: {old:.4f} -> {new:.4f}")
        return f"Decode out of memory happened. #retracted_reqs: {n}, #new_token_ratio: {old:.4f} -> {new:.4f}"

    # -- startup -----------------------------------------------------------------------------
    def server_args(self, model: str, tp: int, mem_fraction: float, kv_dtype: str,
                    max_running: int, context: int, port: int, dp: int = 1) -> str:
        """The one long `server_args=ServerArgs(...)` line."""
        return (f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', "
                f"tokenizer_mode='auto', skip_tokenizer_init=False, load_format='auto', "
                f"trust_remote_code=True, dtype='auto', kv_cache_dtype='{kv_dtype}', "
                f"quantization=None, context_length={context}, device='cuda', "
                f"served_model_name='{model}', chat_template=None, is_embedding=False, "
                f"host='127.0.0.1', port={port}, mem_fraction_static={mem_fraction}, "
                f"max_running_requests={max_running}, max_total_tokens=None, "
                f"chunked_prefill_size=8192, max_prefill_tokens=16384, "
                f"schedule_policy='fcfs', schedule_conservativeness=1.0, tp_size={tp}, "
                f"stream_interval=1, random_seed=42, log_level='info', "
                f"log_requests=False, show_time_cost=False, enable_metrics=True, "
                f"decode_log_interval=40, dp_size={dp}, load_balance_method='round_robin', "
                f"enable_dp_attention={dp > 1}, "
                f"disable_radix_cache=False, disable_cuda_graph=False, "
                f"enable_torch_compile=False, watchdog_timeout=300)")

    def load_weight_begin(self, avail: float) -> str:
        return f"Load weight begin. avail mem={avail:.2f} GB"

    def load_weight_end(self, model_type: str, avail: float, usage: float, elapsed: float) -> str:
        if self.family == "0.5.12":
            return (f"Load weight end. elapsed={elapsed:.2f} s, type={model_type}, "
                    f"quant=fp8, fmt=e4m3, avail mem={avail:.2f} GB, mem usage={usage:.2f} GB.")
        return (f"Load weight end. type={model_type}, dtype=torch.bfloat16, "
                f"avail mem={avail:.2f} GB, mem usage={usage:.2f} GB.")

    def kv_allocated(self, tokens: int, k_gb: float, v_gb: float) -> str:
        return f"KV Cache is allocated. #tokens: {tokens}, K size: {k_gb:.2f} GB, V size: {v_gb:.2f} GB"

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
        return "/model_info" if self.family == "0.5.12" else "/get_model_info"

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
        if self.family == "0.5.12":
            return "SIGQUIT received. signum=3, frame=None. It usually means one child failed."
        return "Received sigquit from a child process. It usually means the child failed."

    def sigterm(self) -> str:
        """The operator stopped the server (0.5.x prints this; older ones print nothing)."""
        return "SIGTERM received. signum=15 frame=None. Draining requests and shutting down..."
