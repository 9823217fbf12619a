"""The alert history: every alert of this session as it fired and cleared, and earlier ones.

`AlertHistory` records each evaluation's changes. Earlier sessions come from the JSONL history
file (`dash.sources.alert_sinks` reads its end at start and gives its lines as dicts);
`entries_from_lines` pairs each "fired" line with its "cleared" line. Bounded; pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dash.core.alerts.model import AlertChanges
from dash.core.snapshot import SEVERITY_ORDER, Alert, HistoryEntry

MAX_ENTRIES = 500
"""Entries kept (this session's and earlier ones together); the oldest go first."""


def alert_from_json(doc: Mapping[str, Any]) -> Alert | None:
    """The Alert in a history line (or `--json` alert object), or None when it is not one."""
    try:
        severity = str(doc["severity"])
        if severity not in SEVERITY_ORDER:
            return None
        return Alert(id=str(doc["id"]), severity=severity,  # type: ignore[arg-type]
                     since=float(doc["since"]), message=str(doc.get("message") or ""),
                     evidence=str(doc.get("evidence") or ""), hint=str(doc.get("hint") or ""),
                     subject=_text(doc.get("subject")), line=_text(doc.get("line")),
                     acknowledged=bool(doc.get("acknowledged")))
    except (KeyError, TypeError, ValueError):
        return None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def entries_from_lines(lines: Iterable[Mapping[str, Any]],
                       watch: str | None = None) -> list[HistoryEntry]:
    """Pair the "fired" and "cleared" lines of the history file, oldest first.

    A fired alert with no cleared line was still active when its kdash ended; a cleared line
    whose fired line was cut off (the file's end is read) still counts, from its `since`.
    `watch`: only the lines of sessions that watched the same (their `watch` field); another
    server's OOM is not this one's history.
    """
    out: list[HistoryEntry] = []
    open_at: dict[tuple[Any, str], int] = {}
    for doc in lines:
        if watch is not None and doc.get("watch") != watch:
            continue
        alert = alert_from_json(doc)
        at = doc.get("at")
        if alert is None or isinstance(at, bool) or not isinstance(at, (int, float)):
            continue
        key = (doc.get("session"), alert.key)
        if doc.get("event") == "fired":
            open_at[key] = len(out)
            out.append(HistoryEntry(alert, float(at), None, earlier=True))
        elif doc.get("event") == "cleared":
            i = open_at.pop(key, None)
            fired = out[i].fired_at if i is not None else alert.since
            entry = HistoryEntry(alert, fired, float(at), earlier=True)
            if i is None:
                out.append(entry)
            else:
                out[i] = entry
    return out[-MAX_ENTRIES:]


class AlertHistory:
    """This session's alerts as they fired and cleared, after the earlier sessions' ones."""

    def __init__(self, earlier: Iterable[HistoryEntry] = (), limit: int = MAX_ENTRIES) -> None:
        self._entries: list[HistoryEntry] = list(earlier)[-limit:]
        self._limit = limit
        self._open: dict[str, HistoryEntry] = {}
        self._frozen: tuple[HistoryEntry, ...] | None = None

    def load_earlier(self, earlier: Iterable[HistoryEntry]) -> None:
        """Put earlier sessions' entries before this session's."""
        self._entries = [*earlier, *self._entries][-self._limit:]
        self._frozen = None

    def record(self, changes: AlertChanges, now: float) -> None:
        """Take one evaluation's changes."""
        if not changes:
            return
        # Cleared first: a next event's alert may fire under the key the one before cleared.
        for alert in changes.cleared:
            entry = self._open.pop(alert.key, None)
            done = HistoryEntry(alert, entry.fired_at if entry else alert.since, now)
            i = self._index(entry) if entry is not None else -1
            if i >= 0:
                self._entries[i] = done
            else:
                self._entries.append(done)
        for alert in changes.new:
            fired = HistoryEntry(alert, now)
            self._open[alert.key] = fired
            self._entries.append(fired)
        del self._entries[:-self._limit]
        self._frozen = None

    def _index(self, entry: HistoryEntry) -> int:
        """Where `entry` (this very object) is, newest first; -1 once it was trimmed away."""
        for i in range(len(self._entries) - 1, -1, -1):
            if self._entries[i] is entry:
                return i
        return -1

    def entries(self) -> tuple[HistoryEntry, ...]:
        """Every entry, oldest first (shared by snapshots until the next change)."""
        if self._frozen is None:
            self._frozen = tuple(self._entries)
        return self._frozen
