"""The launches of each server log, kept in kdash's state directory: a kdash started later (or
after the log was rewritten by a restart) still shows the earlier starts of that log.

One JSON file per log, named by a digest of the log's real path (`launches/<digest>.json` under
the state directory, `--config`'s `state_dir` or the user's), holding that path and the
launches (`dash.core.launch.launch_to_json`): a different log path has a file of its own and
inherits nothing. A file is written whole to a temporary name and renamed over the old one, so
no reader sees half of it. A damaged, foreign or unreadable file is a notice, never fatal.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dash.core.config import Config
from dash.core.launch import Launch, launch_from_json, launch_to_json
from dash.core.state.launches import MAX_LAUNCHES
from dash.core.state.run import RunState
from dash.sources.config_files import user_state_dir

FOLDER = "launches"
FORMAT = 1
SAVE_EVERY_S = 30.0
"""The current launch's figures are saved at most this often; a start or an end at once."""


def state_dir(cfg: Config) -> Path:
    """Where kdash keeps its own files: `state_dir` when set, else the user state directory."""
    return cfg.state_dir if cfg.state_dir is not None else user_state_dir()


def _real(log: Path) -> str:
    try:
        return str(log.expanduser().resolve())
    except (OSError, RuntimeError):
        return str(log.expanduser().absolute())


class LaunchStore:
    """The launches file of one log."""

    def __init__(self, base: Path, log: Path) -> None:
        self.log = _real(log)
        digest = hashlib.sha256(self.log.encode()).hexdigest()[:24]
        self.path = base / FOLDER / f"{digest}.json"
        # Saves run in threads of their own, and two can overlap (the first at the first tick,
        # the next as the log's read shows a start): one at a time, each to the one temporary
        # name, and one asked for earlier does not write over a later one's launches.
        self._lock = threading.Lock()
        self._written: int | None = None  # the version of the launches written last

    def load(self) -> tuple[tuple[Launch, ...], str | None]:
        """The launches saved for this log, and a notice when the file could not be used."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return (), None
        except (OSError, UnicodeDecodeError) as exc:
            return (), f"launch history {self.path}: {_why(exc)}; starting without it"
        try:
            doc = json.loads(text)
        except ValueError:
            return (), f"launch history {self.path}: not JSON; starting without it"
        if not isinstance(doc, dict) or doc.get("log") != self.log:
            return (), f"launch history {self.path}: not this log's; starting without it"
        raw = doc.get("launches")
        launches = [x for x in map(launch_from_json, raw if isinstance(raw, list) else ())
                    if x is not None]
        return tuple(launches[-MAX_LAUNCHES:]), None

    def save(self, launches: Sequence[Launch], at: float,
             version: int | None = None) -> str | None:
        """Write the launches (blocks: call it off the UI thread); an error text or None.
        Saves of one store are written one at a time; given the launches' `version` (the
        tracker's), one older than the version written already writes nothing."""
        doc: dict[str, Any] = {"format": FORMAT, "log": self.log, "saved_at": at,
                               "launches": [launch_to_json(x) for x in launches[-MAX_LAUNCHES:]]}
        with self._lock:
            if version is not None:
                if self._written is not None and version < self._written:
                    return None
                self._written = version
            return self._write(doc)

    def _write(self, doc: dict[str, Any]) -> str | None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(doc, default=str), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass  # never written (no directory): nothing to remove
            return f"launch history {self.path}: {_why(exc)}; launches are not being kept"
        return None


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc)


class LaunchKeeper:
    """When to save one log's launches: at once after a start or an end, otherwise at most
    every `every_s` while the current launch's figures change."""

    def __init__(self, store: LaunchStore, path: str | None = None,
                 every_s: float = SAVE_EVERY_S) -> None:
        self.store = store
        self.path = path if path is not None else store.log
        """The log as the run state names it (`RunState.launches_for(path)`)."""
        self.every_s = every_s
        self._saved: tuple[int, int] | None = None
        self._at = float("-inf")

    def due(self, version: int, boundaries: int, now: float) -> bool:
        """Whether launches at this (version, boundaries) should be saved now."""
        if self._saved is None:
            return True
        if version == self._saved[0]:
            return False
        return boundaries != self._saved[1] or now - self._at >= self.every_s

    def taken(self, version: int, boundaries: int, now: float) -> None:
        """The launches at this version are being saved (so the next `due` waits for news)."""
        self._saved, self._at = (version, boundaries), now


_GLOB = frozenset("*?[")


def keepers_for(cfg: Config) -> tuple[LaunchKeeper, ...]:
    """A keeper per server log named by its path (a glob's logs are tracked, not kept: their
    files come and go)."""
    base = state_dir(cfg)
    return tuple(LaunchKeeper(LaunchStore(base, log), str(log)) for log in cfg.logs
                 if not _GLOB.intersection(str(log)))


def remembered(state: RunState, cfg: Config) -> tuple[LaunchKeeper, ...]:
    """The keepers of the configured logs' launches, with what they kept given to `state` (a
    notice when a file could not be used)."""
    keepers = keepers_for(cfg)
    for keeper in keepers:
        launches, notice = keeper.store.load()
        state.launches_for(keeper.path).remember(launches)
        if notice:
            state.add_notice(notice)
    return keepers
