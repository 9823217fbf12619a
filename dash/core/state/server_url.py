"""Which URL to poll: `--url`, else host and port from the log's `server_args`, else the default.

The server log says where its server listens: SGLang's `ServerArgs(..., host=..., port=...)` (or
the dict form of 0.5.19+) and vLLM's `non-default args: {...}` (which names the port only when it
is not vLLM's default 8000). The parser gives those as a `server_args` event with `port` and the
full `args`; `UrlFinder` reads them in file order, so the latest start wins (a restart on another
port moves the URL with it). Pure: fed records, answers a `UrlChoice`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from dash.core.config import DEFAULT_PORTS
from dash.core.snapshot import Record

UrlSource = Literal["flag", "server_args", "default"]

_ANY_ADDRESS = {"", "0.0.0.0", "::", "[::]", "*"}
"""Hosts that mean "every interface": reached through the loopback address."""


@dataclass(frozen=True, slots=True)
class UrlChoice:
    """The URL kdash polls and why that one."""

    url: str
    source: UrlSource
    why: str
    """For the user: "--url", "the log's server_args, port 8000", "SGLang's default port; no
    server_args in the log"."""
    log_port: int | None = None
    """The port the log's server_args name, when they do (to say where to look instead)."""


def _port(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        port = int(value)
    except (TypeError, ValueError):
        return None
    return port if 0 < port < 65536 else None


def _host(value: Any) -> str:
    if not isinstance(value, str) or value.strip() in _ANY_ADDRESS:
        return "127.0.0.1"
    host = value.strip()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class UrlFinder:
    """Follows the log's server_args; `choice()` is the URL to poll now (None: HTTP is off)."""

    def __init__(self, explicit: str | None) -> None:
        """`explicit`: the configured URL; None finds it in the log; "" turns HTTP off."""
        self._explicit = explicit
        self._engine: str | None = None
        self._host: str | None = None
        self._port: int | None = None
        self._seen_args = False

    def feed(self, records: Iterable[Record | None]) -> None:
        """Take parsed records in file order (None items are lines of no interest)."""
        for rec in records:
            if not rec:
                continue
            if self._engine is None and isinstance(rec.get("engine"), str):
                self._engine = rec["engine"]
            if rec.get("kind") == "event" and rec.get("event") == "server_args":
                self._take_args(rec)

    def _take_args(self, rec: Mapping[str, Any]) -> None:
        args = rec.get("args") if isinstance(rec.get("args"), Mapping) else {}
        assert isinstance(args, Mapping)
        self._seen_args = True
        if isinstance(rec.get("engine"), str):
            self._engine = rec["engine"]
        # A dump that leaves the port out (vLLM lists only non-default args) means the default.
        self._port = _port(rec.get("port", args.get("port")))
        self._host = _host(args.get("host"))

    def choice(self) -> UrlChoice | None:
        """The URL to poll and why; None when HTTP is off."""
        if self._explicit == "":
            return None
        if self._explicit:
            return UrlChoice(self._explicit, "flag", "--url", self._port)
        engine = self._engine or "sglang"
        name = "vLLM" if engine == "vllm" else "SGLang"
        default = DEFAULT_PORTS.get(engine, DEFAULT_PORTS["sglang"])
        if self._seen_args:
            port = self._port or default
            said = f"port {self._port}" if self._port else f"no port, so {name}'s default {default}"
            return UrlChoice(f"http://{self._host or '127.0.0.1'}:{port}", "server_args",
                             f"the log's server_args, {said}", self._port)
        return UrlChoice(f"http://127.0.0.1:{default}", "default",
                         f"{name}'s default port; no server_args in the log")
