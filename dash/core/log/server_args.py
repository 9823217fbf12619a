"""The server-args dump: `server_args=ServerArgs(k=v, ...)` (SGLang <= 0.5.18),
`server_args={'k': v, ...}` (0.5.19+), vLLM's `non-default args: {...}` (0.9.2+) and its
`args: Namespace(k=v, ...)` (0.4.3 - 0.8.5).

Values are Python reprs; each is read with `ast.literal_eval` where it is a literal and kept as
text otherwise (`device(type='cuda')`). A dump cut short by the line cap still yields the
arguments before the cut. Secrets the servers print with their arguments (SGLang's `api_key`
and `admin_api_key`, vLLM's `api_key` and `hf_token`) are kept as `'***'`, in the arguments and
in the event's message: nothing kdash prints, exports or remembers carries them.
"""

from __future__ import annotations

import ast
import json
from typing import Any

_MAX_VALUE = 2000
SECRET_ARGS = frozenset({"api_key", "admin_api_key", "hf_token", "ssl_keyfile_password"})
"""Arguments whose value is a secret: kept as `REDACTED` when set."""
REDACTED = "***"


def is_set_secret(name: str, value: object) -> bool:
    """Whether an argument holds a secret to redact: a secret one, given a value."""
    return name in SECRET_ARGS and value not in (None, "", [], "None")

_OPEN = "([{"
_CLOSE = ")]}"

# record key -> argument names that carry it (SGLang first, then vLLM)
_TOP_LEVEL = {
    "model": ("model_path", "model"),
    "tp_size": ("tp_size", "tensor_parallel_size"),
    "dp_size": ("dp_size", "data_parallel_size"),
    "mem_fraction_static": ("mem_fraction_static",),
    "gpu_memory_utilization": ("gpu_memory_utilization",),
    "kv_cache_dtype": ("kv_cache_dtype",),
    "max_running_requests": ("max_running_requests", "max_num_seqs"),
    "context_length": ("context_length", "max_model_len"),
    "hicache_size": ("hicache_size",),
    "port": ("port",),
}


def _split_top(body: str) -> list[str]:
    """Split on commas outside quotes and brackets."""
    items: list[str] = []
    depth, quote, start, i, n = 0, "", 0, 0, len(body)
    while i < n:
        c = body[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        elif c == "," and depth == 0:
            items.append(body[start:i])
            start = i + 1
        i += 1
    items.append(body[start:])
    return items


def _value(text: str) -> Any:
    text = text.strip()
    if len(text) > _MAX_VALUE:
        return text[:_MAX_VALUE]
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    if isinstance(v, tuple | set | frozenset):
        v = list(v)
    try:
        json.dumps(v, allow_nan=False)  # `1e999` is no JSON number
    except (TypeError, ValueError, RecursionError):
        return text
    return v


def _key(text: str, dict_form: bool) -> tuple[str, str] | None:
    if dict_form:
        k, sep, v = text.partition(":")
        k = k.strip().strip("'\"")
    else:
        k, sep, v = text.partition("=")
        k = k.strip()
    if not sep or not k.isidentifier():
        return None
    return k, v


def parse_server_args(msg: str) -> dict[str, Any] | None:
    """A `server_args` event (with `args` and the top-level facts), or None if no dump."""
    for opener in ("ServerArgs(", "Namespace(", "{"):
        at = msg.find(opener)
        if at >= 0:
            body = msg[at + len(opener):]
            break
    else:
        return None
    closer = "}" if opener == "{" else ")"
    body = body.rstrip()
    if body.endswith(closer):
        body = body[:-1]
    args: dict[str, Any] = {}
    secrets: list[str] = []
    for item in _split_top(body):
        kv = _key(item, dict_form=opener == "{")
        if kv is not None:
            value = _value(kv[1])
            if is_set_secret(kv[0], value):
                secrets.append(kv[1].strip())
                value = REDACTED
            args[kv[0]] = value
    out: dict[str, Any] = {"event": "server_args", "args": args}
    if secrets:
        for raw in secrets:
            msg = msg.replace(raw, repr(REDACTED))
        out["message"] = msg.strip()
    for name, sources in _TOP_LEVEL.items():
        for src in sources:
            if src in args:
                out[name] = _fact(name, args[src])
                break
    return out


_COUNTS = frozenset({"tp_size", "dp_size", "max_running_requests", "context_length", "port"})


def _fact(name: str, value: Any) -> Any:
    """A top-level fact in its unit: counts are ints >= 0, `mem_fraction_static` (vLLM's
    `gpu_memory_utilization`) a fraction,
    `hicache_size` GB >= 0; anything else (`None`, `-1` for "off", text) is no value."""
    if name in _COUNTS:
        return value if type(value) is int and value >= 0 else None
    if name in ("mem_fraction_static", "gpu_memory_utilization"):
        return value if type(value) in (int, float) and 0 <= value <= 1 else None
    if name == "hicache_size":
        return value if type(value) in (int, float) and 0 <= value < float("inf") else None
    return value
