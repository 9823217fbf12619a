"""Alert delivery: `--on-alert CMD`, a Slack-compatible webhook, and a JSONL history.

Every function returns an error text (or None) instead of raising: a broken hook must never take
the dashboard down. `run_command`, `append_history` and `read_history` block, so the caller runs
them in a thread or an executor; `post` is async. The terminal bell is the UI's job (it reads
`AlertChanges.new`). The history lives in the state directory (`state_dir`, default the user's),
never beside watched files; each line names the kdash session that wrote it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dash.core.alerts.model import AlertChanges, alert_text, alert_to_json
from dash.core.config import Config
from dash.core.snapshot import Alert
from dash.sources.config_files import user_state_dir

HISTORY_NAME = "alerts.jsonl"
HISTORY_MAX_BYTES = 8 * 1024 * 1024
"""The history rolls over to `alerts.jsonl.1` past this size, so it stays bounded."""
HISTORY_READ_BYTES = 512 * 1024
"""How much of the history's end is read at start (the last few hundred alerts)."""
COMMAND_TIMEOUT_S = 10.0


def history_path(cfg: Config | None = None) -> Path:
    """Where the alert history lives: the state directory, never beside watched files."""
    base = cfg.state_dir if cfg is not None and cfg.state_dir is not None else user_state_dir()
    return base / HISTORY_NAME


def new_session() -> str:
    """An id for this kdash process's history lines: its start time and pid."""
    return f"{int(time.time())}-{os.getpid()}"


def alert_payload(alert: Alert, event: str = "fired", at: float | None = None,
                  session: str | None = None, watch: str | None = None) -> dict[str, Any]:
    """The JSON given to the command and the history: the alert plus what happened to it."""
    doc = alert_to_json(alert)
    doc["event"] = event
    if at is not None:
        doc["at"] = at
    if session is not None:
        doc["session"] = session
    if watch is not None:
        doc["watch"] = watch
    return doc


def watch_key(cfg: Config) -> str:
    """What a session watched, as its history lines say: its server logs (absolute paths),
    else its output globs, else its URL. Earlier sessions' alerts are shown only to a session
    that watches the same: one history file serves every server a user watches."""
    logs = [cfg.log, *cfg.more_logs] if cfg.log is not None else []
    if logs:
        return " ".join(sorted(str(Path(p).absolute()) for p in logs))
    if cfg.outputs:
        return " ".join(sorted(cfg.outputs))
    return cfg.url or ""


def read_history(path: Path, max_bytes: int = HISTORY_READ_BYTES
                 ) -> tuple[list[dict[str, Any]], str | None]:
    """The last lines of the history file as dicts (oldest first), and an error text or None.

    Only the file's end is read; a line cut at the start of that end, or one that is not JSON,
    is skipped. A file that does not exist yet is no error.
    """
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - max_bytes))
            data = fh.read(max_bytes)
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        return [], f"alert history {path}: {exc.strerror or exc}"
    lines = data.split(b"\n")
    if size > max_bytes:
        lines = lines[1:]  # the first one is cut
    out: list[dict[str, Any]] = []
    for raw in lines:
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out, None


def run_command(cmd: str, alert: Alert, *, event: str = "fired",
                timeout: float = COMMAND_TIMEOUT_S) -> str | None:
    """Run CMD without a shell, the alert as JSON on stdin. Blocks; error text or None."""
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        return f"on-alert command: {exc}"
    if not argv:
        return "on-alert command is empty"
    data = json.dumps(alert_payload(alert, event)).encode()
    try:
        proc = subprocess.run(argv, input=data, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return f"on-alert command timed out after {timeout:g} s"
    except OSError as exc:
        return f"on-alert command {argv[0]!r}: {exc.strerror or exc}"
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        tail = f": {err[-1][:200]}" if err else ""
        return f"on-alert command exited {proc.returncode}{tail}"
    return None


def append_history(alerts: Iterable[tuple[Alert, str]], at: float,
                   path: Path | None = None, session: str | None = None,
                   watch: str | None = None) -> str | None:
    """Append `(alert, event)` pairs as JSON lines; roll the file over when it grows too big."""
    path = path or history_path()
    lines = "".join(json.dumps(alert_payload(a, ev, at, session, watch)) + "\n"
                    for a, ev in alerts)
    if not lines:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > HISTORY_MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
        with path.open("a", encoding="utf-8") as fh:
            fh.write(lines)
    except OSError as exc:
        return f"alert history {path}: {exc.strerror or exc}"
    return None


async def post(url: str, alert: Alert) -> str | None:
    """POST `{"text": ...}` (Slack-compatible) for one alert; error text or None. The error
    names the webhook by its host only: a hook's path is often its secret (Slack's is)."""
    from urllib.parse import urlsplit

    from dash.sources.http import post_webhook  # here: httpx loads only when a webhook is set

    error = await post_webhook(url, {"text": f"{alert_text(alert)}\n{alert.evidence}"})
    return None if error is None else f"webhook to {urlsplit(url).netloc or url}: {error}"


@dataclass
class AlertDelivery:
    """Sends AlertChanges to the configured command, webhook and history."""

    on_alert: str | None = None
    webhook: str | None = None
    history: Path | None = None
    """None: no history file."""
    timeout: float = COMMAND_TIMEOUT_S
    session: str = field(default_factory=new_session)
    watch: str | None = None
    """What this session watches (`watch_key`), written with each history line."""

    @classmethod
    def from_config(cls, cfg: Config) -> AlertDelivery:
        return cls(on_alert=cfg.on_alert, webhook=cfg.webhook,
                   history=history_path(cfg) if cfg.alert_history else None,
                   watch=watch_key(cfg))

    async def deliver(self, changes: AlertChanges, at: float) -> list[str]:
        """Deliver new alerts (and record cleared ones); errors come back as texts."""
        errors: list[str | None] = []
        if self.history is not None and changes:
            # Cleared first: a next event's alert may fire under the key the one before cleared.
            pairs = [(a, "cleared") for a in changes.cleared] + [(a, "fired") for a in changes.new]
            errors.append(await asyncio.to_thread(append_history, pairs, at, self.history,
                                                  self.session, self.watch))
        for alert in changes.new:
            if self.on_alert:
                errors.append(await asyncio.to_thread(
                    run_command, self.on_alert, alert, timeout=self.timeout))
            if self.webhook:
                errors.append(await post(self.webhook, alert))
        return [e for e in errors if e]

    def deliver_blocking(self, changes: AlertChanges, at: float) -> list[str]:
        """`deliver` for a worker thread that has no event loop of its own."""
        return asyncio.run(self.deliver(changes, at))
