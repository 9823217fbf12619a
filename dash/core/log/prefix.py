"""Line prefixes: clean a raw line and split it into timestamp, rank tag and message.

The prefix shapes are the grammar's (`dash.core.log.grammar.PREFIXES`); this module peels them.

Every shape real servers print, peeled from the left in layers: what a collector adds (a
docker compose `service-1  | ` column; an RFC 3339 stamp from kubectl / docker `--timestamps`,
`2025-10-20T03:02:22.123456789Z `, or CI's `[2026-02-11T08:15:03Z] `, with a CRI file's
`stdout F ` or journald's `host ident[pid]: ` after it; journald's `Feb 11 08:15:03 host
ident[pid]: `), a Ray / vLLM process tag (`(SGLangEngine pid=12)`, `(APIServer pid=1)`,
`(VllmWorker rank=3 pid=1187)`, `(Worker_DP1_TP0 pid=9, ip=10.0.0.2)`, `(pid=45601)`), then the
logger's own prefix: SGLang `[HH:MM:SS TP0]` / `[YYYY-MM-DD HH:MM:SS(.mmm) DP1 PP0 TP3 EP3]`,
vLLM `INFO 01-22 18:27:20 [file.py:12]`, a custom format with the timestamp first
(`2025-10-20 03:02:22 INFO 31223 [DP3 TP3 EP3 file.py:222]`, `2026-06-07 10:59:31,659 [INFO]
name:`), SGLang 0.2.x `[gpu_id=N]`, or nothing at all. Colour codes (real ESC bytes and their
`^[[` caret residue), trailing `\\r` / `^M` and Ray's ` [repeated 7x across cluster]` go first.

A stamp with a zone (the collector's) is the record's `ts`, kept with its year and zone, so
the time needs no guess; otherwise the logger's own stamp is, and a syslog stamp (no zone, no
year) only where the line has no other. The ranks a process names (`Worker_TP0` -> `TP0`,
`VllmWorker rank=3` -> `rank=3`, `EngineCore_DP1` -> `DP1`) are the record's `rank` where the
logger's prefix prints none.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from dash.core.log.syntax import Prefixes
from dash.core.log.timestamps import normalise_ts

_ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;?]*[A-Za-z]")
_SGLANG_INSIDE = re.compile(r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
_RAY_REPEAT = re.compile(r" ?\[repeated \d{1,9}x across cluster\]"
                         r"(?: \(Ray deduplicates logs by default\..{0,400})?$")
_MONTHS = {m: f"{i:02d}" for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}


@dataclass(frozen=True, slots=True)
class Prefix:
    """What the prefix of one line says, and the message after it."""

    ts: str | None
    rank: str | None
    engine: str | None  # "vllm" / "sglang" when the prefix tells, else None
    level: str | None  # printed level (vLLM, custom formats); SGLang prints none
    message: str
    process: str | None = None  # the process tag's name, without its ranks (`EngineCore`)


MAX_PROCESS_TAGS = 3


def _joined(outer: str | None, inner: str | None) -> str | None:
    """The ranks of nested process tags, the outer first, each once: `DP0` and `DP0 TP1` are
    `DP0 TP1`."""
    if not outer or not inner:
        return outer or inner
    tags = outer.split()
    return " ".join([*tags, *(t for t in inner.split() if t not in tags)])


def clean(text: str) -> str:
    """Drop colour codes, a trailing newline / `\\r` / `^M`, what a `\\r` overwrote, and Ray's
    repeat count."""
    if "\x1b" in text or "^[" in text:
        text = _ANSI.sub("", text)
    text = text.rstrip("\r\n")
    while text.endswith("^M"):
        text = text[:-2].rstrip("\r")
    if "\r" in text:
        # a terminal shows only what follows the last carriage return (tqdm bars)
        tail = text.rsplit("\r", 1)[1]
        text = tail if tail.strip() else text.replace("\r", "")
    if "across cluster]" in text:
        text = _RAY_REPEAT.sub("", text)
    return text


_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_TORCH_LEVELS = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}


def _syslog_ts(stamp: str) -> str | None:
    """`Feb 11 08:15:03` -> `02-11T08:15:03` (the month-day form: no year); None for `Feb 30`."""
    month, day, clock = stamp.split(None, 2)
    mo = _MONTHS[month]
    if not 1 <= int(day) <= _DAYS[int(mo) - 1]:
        return None
    return normalise_ts(f"{mo}-{int(day):02d} {clock}")


class PrefixReader:
    """Peels the prefixes of a grammar (`Prefixes`) off cleaned lines."""

    def __init__(self, spec: Prefixes) -> None:
        self.spec = spec
        tag, level = spec.rank_tag, spec.level_names
        self.collector = re.compile(spec.collector)
        self.outer = re.compile(r"(?:\[(" + spec.outer_stamp + r")\]|(" + spec.outer_stamp
                                + ")) " + spec.outer_tail)
        self.syslog = re.compile(spec.syslog_stamp)
        self.processes = tuple(re.compile(p) for p in spec.processes)
        self.process_lead = re.compile(spec.process_lead)
        self.process_dp = re.compile(spec.process_dp)
        self.json_stamp = re.compile("(?:" + spec.stamp_first + ")(?:" + spec.zone + ")?")
        self.json_levels = frozenset(spec.levels)
        self.proc_rank = re.compile(r"(?:^|[ _])(?:(rank=[0-9]+)|(" + tag + r"))(?=$|[ _])")
        self.bracket = re.compile(r"\[(" + spec.bracket_stamp + ")((?: " + tag + r")*)\] ?")
        self.bracket_plain = r"\[(?:" + spec.bracket_stamp + ")(?: " + tag + r")*\] ?"
        """The bracket without groups (for patterns that embed it)."""
        self.vllm = re.compile(spec.vllm)
        self.stamp_first = re.compile(
            "(" + spec.stamp_first + ")(" + spec.zone + ")?"
            # the header between the stamp and the message: level, pid, [tags file:line],
            # `[LEVEL] logger:` or ` - logger - LEVEL - `
            r"((?: - [\w.]{1,100})? - " + level + r" -"
            r"|(?: \[?" + level + r"\]?(?: [a-z_][\w.]{0,100}:(?= ))?| \d{1,10}| \[[^\]]{0,200}\]| -)*)"
            r":? ?"
        )
        self.gpu_tag = re.compile(spec.gpu_tag)
        self.torch = re.compile(spec.torch)
        self.named_bracket = re.compile(r"\[(" + spec.bracket_stamp + ")((?: " + tag + r")*) ("
                                        + spec.bracket_name + r")\] ?")
        self.rank_in = re.compile(r"\b" + tag + r"\b")
        self.level_in = re.compile(r"\b(ERROR|CRITICAL|FATAL|WARNING)\b")
        self._initials = frozenset(m[0] for m in _MONTHS)

    def _process_engine(self, name: str | None) -> str:
        low = (name or "").lower()
        return next((eng for key, eng in self.spec.process_engines if key in low),
                    self.spec.process_default)

    def _process_ranks(self, name: str) -> tuple[str, str | None]:
        """`Worker_DP1_TP0` -> (`Worker`, `DP1 TP0`); `VllmWorker rank=3` -> (.., `rank=3`)."""
        tags = [a or b for a, b in self.proc_rank.findall(name)]
        if not tags:
            dp = self.process_dp.fullmatch(name)
            return (name, f"DP{dp.group(1)}") if dp else (name, None)
        first = self.proc_rank.search(name)
        base = name[:first.start()] if first is not None else name
        return base or name, " ".join(tags)

    def _collected(self, line: str) -> tuple[int, str | None, str | None]:
        """Past what a collector added: (position, zoned stamp, stamp without zone or year)."""
        pos = 0
        if line.find("| ", 0, 80) > 0:
            m = self.collector.match(line)
            if m:
                pos = m.end()
        c = line[pos:pos + 1]
        if c.isdigit() or c == "[":
            m = self.outer.match(line, pos)
            if m:
                return m.end(), normalise_ts(m.group(1) or m.group(2)), None
        elif c in self._initials:
            m = self.syslog.match(line, pos)
            if m:
                return m.end(), None, _syslog_ts(m.group(1))
        return pos, None, None

    def split(self, line: str) -> Prefix:
        """Peel the prefixes off a cleaned line."""
        pos, zoned, soft = self._collected(line)
        if line.startswith("{", pos) and line.endswith("}"):
            pre = self._json(line[pos:] if pos else line)
            if pre is not None:  # a collector's zoned stamp still wins (see the module's doc)
                return replace(pre, ts=zoned or pre.ts or soft) if pos else pre
        engine = process = rank = None
        if line.startswith("[", pos):
            m = self.process_lead.match(line, pos)
            if m:
                pos = m.end()
        for _ in range(MAX_PROCESS_TAGS):
            if not line.startswith("(", pos):
                break
            m = next(filter(None, (proc.match(line, pos) for proc in self.processes)), None)
            if m is None:
                break
            # tags in a row: a Ray worker's line as the process that forwards it printed it,
            # `(EngineCore_DP0 pid=479) (RayWorkerWrapper pid=223, ip=...) INFO ...`; the last
            # names the process, the ranks are all of theirs
            named = self._process_engine(m.group(1))
            if engine is None or named != self.spec.process_default:
                engine = named
            if m.group(1):
                process, ranks = self._process_ranks(m.group(1))
                rank = _joined(rank, ranks)
            pos = m.end()
        pre = self._inner(line, pos, engine)
        if zoned or soft or process or rank:
            return Prefix(zoned or pre.ts or soft, pre.rank or rank, pre.engine, pre.level,
                          pre.message, process)
        return pre

    def _json(self, line: str) -> Prefix | None:
        """A JSON formatter's line: its message, stamp, level and process from their keys
        (`JsonKeys`); None for a line that is no JSON object with a message. A traceback in
        `exc_info` is not read: one line gives one record, its message's."""
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # nested past the interpreter's depth: no log line
            return None
        keys = self.spec.json_keys
        if not isinstance(obj, dict) or (msg := _first(obj, keys.message)) is None:
            return None
        stamp = _first(obj, keys.time)
        ts = normalise_ts(stamp) if stamp and self.json_stamp.fullmatch(stamp) else None
        level = (_first(obj, keys.level) or "").upper()
        name = _first(obj, keys.process)
        # `MainProcess`: Python's name for a process nobody named, which says nothing
        process, rank = self._process_ranks(name) if name and name != "MainProcess" else (None, None)
        logger = _first(obj, keys.logger) or ""
        engine = next((eng for head, eng in keys.engines if logger.startswith(head)), None)
        return Prefix(ts, rank, engine, level if level in self.json_levels else None,
                      msg.replace("\n", " "), process)

    @staticmethod
    def _torch(m: re.Match[str], line: str) -> Prefix:
        """PyTorch's `[rank7]:[E909 08:45:30.167701534 file.cpp:2252] `: the global rank, the
        level, and a month-day stamp (no year, like vLLM's) where the day is a real one."""
        rank, letter, month, day, clock = m.groups()
        ts = None
        if month and int(day) <= _DAYS[int(month) - 1]:
            ts = normalise_ts(f"{int(month):02d}-{day} {clock}")
        return Prefix(ts, f"rank={rank}" if rank else None, None, _TORCH_LEVELS[letter],
                      line[m.end():])

    def _inner(self, line: str, pos: int, engine: str | None) -> Prefix:
        """The logger's own prefix at `pos`."""
        if line.startswith("[", pos):
            m = self.bracket.match(line, pos)
            if m:
                tags = m.group(2).strip()
                return Prefix(normalise_ts(m.group(1)), tags or None, engine, None,
                              line[m.end():])
            m = self.gpu_tag.match(line, pos)
            if m:
                return Prefix(None, m.group(1), "sglang", None, line[m.end():])
            m = self.torch.match(line, pos)
            if m:
                return self._torch(m, line)
            m = self.named_bracket.match(line, pos)
            if m:
                return Prefix(normalise_ts(m.group(1)), m.group(2).strip() or None, "sglang",
                              None, line[m.end():], m.group(3))
        m = self.vllm.match(line, pos)
        if m:
            stamp = m.group(2)
            return Prefix(normalise_ts(stamp), None, "vllm" if len(stamp) < 16 else engine,
                          m.group(1), line[m.end():])
        if line[pos:pos + 1].isdigit():
            m = self.stamp_first.match(line, pos)
            if m:
                header = m.group(3)
                tags = self.rank_in.findall(header)
                level = self.level_in.search(header)
                return Prefix(
                    normalise_ts(m.group(1) + (m.group(2) or "")), " ".join(tags) or None,
                    engine, level.group(1) if level else None, line[m.end():],
                )
        if "[" in line:
            # a log line glued after a progress bar: `...?it/s][2025-09-11 10:25:47 TP3] ...`
            m = _SGLANG_INSIDE.search(line, pos + 1)
            if m:
                inner = self._inner(line, m.start(), engine)
                if inner.message != line[m.start():]:
                    return inner
        return Prefix(None, None, engine, None, line[pos:])


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of these keys that holds a string."""
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str):
            return value
    return None
