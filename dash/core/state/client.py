"""What the inference client's log says: tqdm progress, resumption, errors, and whether it grows.

A client that prints nothing while its outputs grow is block-buffered (`python -u` fixes it);
the alert for that needs the log's size and when it last grew, which this tracker keeps.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

from dash.core.log.prefix import clean
from dash.core.snapshot import ClientProgress, ClientSnapshot, ProcessInfo, Record

if TYPE_CHECKING:
    from dash.core.config import Config

MAX_TEXT = 2000
"""Lines are cut to this before any regex runs."""
MAX_LABEL = 80
MAX_BARS = 32
"""Labels whose last bar is kept (a bar per partition, or per worker)."""

_TQDM = re.compile(
    r"(?:(?P<pct>\d{1,3})%\|[^|]*\|\s*)?"
    r"(?P<done>\d+(?:\.\d+)?[kKMG]?)(?:/(?P<total>\d+(?:\.\d+)?[kKMG]?|\?)|[A-Za-z]+)\s*"
    r"\[(?=\d*:?\d+:\d\d)[^\],]*"
    r"(?:,\s*(?P<rate>[\d.]+|\?)\s*(?P<scale>[kMG](?=[A-Za-z]))?(?P<unit>[A-Za-z]*)"
    r"/(?P<per>s|[A-Za-z]+))?[^\]]*\]"
)
"""tqdm's bar, in the class of its formats: `{n}/{total}` or, with no total, `{n}{unit}`;
`[elapsed<remaining, rate]` where the rate may carry unit_scale's SI prefix (`1.18kit/s`)
and a postfix may follow it (`, loss=0.5`, vLLM's `est. speed input: ... toks/s`)."""
_RESUMING = re.compile(r"\b(?:resum\w*|skipp\w*|found)\b[^\d\n]{0,20}?(\d[\d,]*)\s+"
                       r"(?:already\s+)?(?:done|completed|finished|existing|processed)\b", re.I)
"""A resumed run's count: `Resuming: 4500 already done`, `Skipping 4500 already completed`,
`Found 4500 existing results`, `resuming from 4,500 completed`."""
_ERROR = re.compile(
    r"^(?:Traceback \(most recent call last\)"
    r"|[\w.]*(?:Error|Exception|Interrupt|Timeout|Disconnected)\b(?::|$)"
    r"|.*\b(?:CUDA out of memory|Killed|Segmentation fault|FATAL|CRITICAL|Connection refused"
    r"|Task exception was never retrieved)\b"
    r"|.*\bERROR\b)"
)
"""Why a client fails: a traceback and its exception line (`httpx.ReadTimeout` names no
`Error`), a shell's `Killed`, a refused connection, asyncio's lost task exception."""
_RETRY = re.compile(
    r"(?i:\bretrying\b|\bretry \d)|\"HTTP/\d(?:\.\d)? [45]\d\d |\bError code: [45]\d\d\b")
"""A request answered with an error and retried: the OpenAI/Anthropic SDKs' `Retrying request
to /chat/completions in 0.8 seconds`, httpx's `HTTP Request: POST ... "HTTP/1.1 429 Too Many
Requests"`, an `APIStatusError` printed (`Error code: 503 - {...}`), a script's own `retry 2/5`."""
_SUFFIX = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}


def _num(text: str) -> float:
    if text and text[-1] in _SUFFIX:
        return float(text[:-1]) * _SUFFIX[text[-1]]
    return float(text)


def parse_progress(text: str) -> ClientProgress | None:
    """A tqdm bar (`45%|####| 450/1000 [00:10<00:12, 40.1it/s]`) or None: the one a terminal
    shows, after the last `\r` (tqdm redraws in place; with a bar per worker it moves the
    cursor between them with `ESC [A`), its cursor codes dropped."""
    text = clean(text[:MAX_TEXT])
    m = _TQDM.search(text)
    if m is None:
        return None
    try:
        done = int(_num(m["done"]))
        total = None if m["total"] in (None, "?") else int(_num(m["total"]))
    except ValueError:
        return None
    pct = float(m["pct"]) if m["pct"] else (100.0 * done / total if total else None)
    rate: float | None = None
    if m["rate"] and m["rate"] != "?":
        r = float(m["rate"]) * _SUFFIX.get(m["scale"] or "", 1.0)
        # tqdm switches to seconds per item when slower than one item a second.
        rate = (1.0 / r if r else None) if m["unit"] == "s" and m["per"] != "s" else r
    label = text[:m.start()].strip().rstrip(":").strip()
    return ClientProgress(done=done, total=total, percent=pct, rate=rate, text=text.strip(),
                          label=label[:MAX_LABEL])


class ClientTracker:
    """Client log lines and file size, and the client processes -> ClientSnapshot."""

    def __init__(self, cfg: Config | None = None, *, max_events: int = 50,
                 max_lines: int = 50) -> None:
        self._log_path = str(cfg.client_log) if cfg is not None and cfg.client_log else None
        self._pattern = cfg.process if cfg is not None else None
        self._size: int | None = None
        self._grew_at: float | None = None
        self._progress: ClientProgress | None = None
        self._bars: dict[str, ClientProgress] = {}
        self._resuming: int | None = None
        self._events: deque[Record] = deque(maxlen=max_events)
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._processes: tuple[ProcessInfo, ...] | None = None
        self._still_since: float | None = None
        self._status = "ok"
        self._message: str | None = None
        self._lineno = 0
        self._in_traceback = False
        self._fed = False
        self._backfill = True
        """The lines now fed are the first read's (the log's end read at start): when they
        were written is not known (the client log has no stamps), so their events are marked
        `backfill`."""

    def feed(self, lines: Iterable[str], now: float, partial: str = "") -> None:
        """New complete lines, and the line being drawn (a tqdm bar between redraws)."""
        self._backfill, self._fed = not self._fed, True
        for raw in lines:
            self._lineno += 1
            self._line(raw[:MAX_TEXT], now)
        if partial:
            p = parse_progress(partial)
            if p is not None:
                self._bar(p)

    def _bar(self, p: ClientProgress) -> None:
        self._progress = p
        self._bars.pop(p.label, None)  # the newest last
        self._bars[p.label] = p
        if len(self._bars) > MAX_BARS:
            del self._bars[next(iter(self._bars))]

    def _line(self, text: str, now: float) -> None:
        if text.strip():
            self._lines.append(text)
        p = parse_progress(text)
        if p is not None:
            self._bar(p)
            return
        m = _RESUMING.search(text)
        if m:
            self._resuming = int(m.group(1).replace(",", ""))
            return
        stripped = text.strip()
        if stripped.startswith("Traceback (most recent call last)"):
            self._in_traceback = True
            self._event(stripped, now)
            return
        if self._in_traceback:
            if text[:1] in (" ", "\t") or not stripped:
                return  # the traceback's frames
            self._in_traceback = False
            if self._events and self._events[-1]["message"].startswith("Traceback"):
                # The exception line says what happened: it becomes the event's message.
                self._events[-1] = {**self._events[-1], "message": stripped}
                return
        if _ERROR.match(stripped):
            self._event(stripped, now)
        elif _RETRY.search(stripped):
            self._event(stripped, now, "retry")

    def _event(self, message: str, now: float, event: str = "error") -> None:
        self._events.append({"kind": "event", "event": event, "message": message,
                             "line": self._lineno, "ts": None, "at": now,
                             "backfill": self._backfill})

    def note_file(self, size: int | None, now: float, status: str = "ok",
                  message: str | None = None) -> None:
        """The client log's size at a poll (None: absent) and the follower's status ("ok",
        "waiting", "error" with its message). Growth stamps `log_last_growth`; the first sight
        of a file stamps nothing (it may have been still for hours), but `log_still_since`
        starts there: the rules measure "not grown for" from it."""
        if size is not None and self._size is not None and size > self._size:
            self._grew_at = now
        if size != self._size or self._still_since is None:
            self._still_since = now
        self._size = size
        self._status, self._message = status, message

    def set_processes(self, processes: tuple[ProcessInfo, ...] | None) -> None:
        self._processes = processes

    def snapshot(self, now: float) -> ClientSnapshot:
        """The client part of the run snapshot (`now` is for symmetry with other trackers)."""
        return ClientSnapshot(
            log_path=self._log_path, log_bytes=self._size, log_last_growth=self._grew_at,
            log_still_since=self._still_since, log_status=self._status,
            log_message=self._message,
            last_progress=self._progress, bars=tuple(self._bars.values()),
            resuming=self._resuming, events=tuple(self._events),
            last_lines=tuple(self._lines), process_pattern=self._pattern,
            processes=self._processes if self._pattern else None,
        )
