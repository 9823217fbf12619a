"""Line prefixes: clean a raw line and split it into timestamp, rank tag and message.

The prefix shapes are the grammar's (`dash.core.log.grammar.PREFIXES`); this module peels them.

Every shape real servers print, peeled from the left in layers:
docker `--timestamps` (`2025-10-20T03:02:22.123456789Z `), a Ray / vLLM process tag
(`(SGLangEngine pid=12)`, `(APIServer pid=1)`), then the logger's own prefix: SGLang
`[HH:MM:SS TP0]` / `[YYYY-MM-DD HH:MM:SS(.mmm) DP1 PP0 TP3 EP3]`, vLLM `INFO 01-22 18:27:20
[file.py:12]`, a custom format with the timestamp first (`2025-10-20 03:02:22 INFO 31223
[DP3 TP3 EP3 file.py:222]`, `2026-06-07 10:59:31,659 [INFO] name:`), SGLang 0.2.x `[gpu_id=N]`,
or nothing at all. Colour codes (real ESC bytes and their `^[[` caret residue) and trailing
`\\r` / `^M` go first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dash.core.log.syntax import Prefixes
from dash.core.log.timestamps import normalise_ts

_ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;?]*[A-Za-z]")
_SGLANG_INSIDE = re.compile(r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


@dataclass(frozen=True, slots=True)
class Prefix:
    """What the prefix of one line says, and the message after it."""

    ts: str | None
    rank: str | None
    engine: str | None  # "vllm" / "sglang" when the prefix tells, else None
    level: str | None  # printed level (vLLM, custom formats); SGLang prints none
    message: str


def clean(text: str) -> str:
    """Drop colour codes, a trailing newline / `\\r` / `^M`, and what a `\\r` overwrote."""
    if "\x1b" in text or "^[" in text:
        text = _ANSI.sub("", text)
    text = text.rstrip("\r\n")
    while text.endswith("^M"):
        text = text[:-2].rstrip("\r")
    if "\r" in text:
        # a terminal shows only what follows the last carriage return (tqdm bars)
        tail = text.rsplit("\r", 1)[1]
        text = tail if tail.strip() else text.replace("\r", "")
    return text


class PrefixReader:
    """Peels the prefixes of a grammar (`Prefixes`) off cleaned lines."""

    def __init__(self, spec: Prefixes) -> None:
        self.spec = spec
        tag, level = spec.rank_tag, spec.level_names
        self.outer = re.compile("(" + spec.outer_stamp + ") ")
        self.processes = tuple(re.compile(p) for p in spec.processes)
        self.bracket = re.compile(r"\[(" + spec.bracket_stamp + ")((?: " + tag + r")*)\] ?")
        self.bracket_plain = r"\[(?:" + spec.bracket_stamp + ")(?: " + tag + r")*\] ?"
        """The bracket without groups (for patterns that embed it)."""
        self.vllm = re.compile(spec.vllm)
        self.stamp_first = re.compile(
            "(" + spec.stamp_first + r")(?:Z|[+-]\d{2}:?\d{2})?"
            # the header between the stamp and the message: level, pid, [tags file:line],
            # `[LEVEL] logger:` or ` - logger - LEVEL - `
            r"((?: - [\w.]{1,100})? - " + level + r" -"
            r"|(?: \[?" + level + r"\]?(?: [a-z_][\w.]{0,100}:(?= ))?| \d{1,10}| \[[^\]]{0,200}\]| -)*)"
            r":? ?"
        )
        self.gpu_tag = re.compile(spec.gpu_tag)
        self.rank_in = re.compile(r"\b" + tag + r"\b")
        self.level_in = re.compile(r"\b(ERROR|CRITICAL|FATAL|WARNING)\b")

    def _process_engine(self, name: str) -> str:
        low = name.lower()
        return next((eng for key, eng in self.spec.process_engines if key in low),
                    self.spec.process_default)

    def split(self, line: str) -> Prefix:
        """Peel the prefixes off a cleaned line."""
        ts: str | None = None
        engine: str | None = None
        pos = 0
        if line[:1].isdigit():
            m = self.outer.match(line)
            if m:
                ts = m.group(1)
                pos = m.end()
        if line.startswith("(", pos):
            for proc in self.processes:
                m = proc.match(line, pos)
                if m:
                    engine = self._process_engine(m.group(1))
                    pos = m.end()
                    break
        if line.startswith("[", pos):
            m = self.bracket.match(line, pos)
            if m:
                tags = m.group(2).strip()
                return Prefix(normalise_ts(m.group(1)), tags or None, engine, None,
                              line[m.end():])
            m = self.gpu_tag.match(line, pos)
            if m:
                return Prefix(ts, m.group(1), "sglang", None, line[m.end():])
        m = self.vllm.match(line, pos)
        if m:
            return Prefix(normalise_ts(m.group(2)), None, "vllm", m.group(1), line[m.end():])
        if line[pos:pos + 1].isdigit():
            m = self.stamp_first.match(line, pos)
            if m:
                header = m.group(2)
                tags = self.rank_in.findall(header)
                level = self.level_in.search(header)
                return Prefix(
                    normalise_ts(m.group(1)), " ".join(tags) or None, engine,
                    level.group(1) if level else None, line[m.end():],
                )
        if "[" in line:
            # a log line glued after a progress bar: `...?it/s][2025-09-11 10:25:47 TP3] ...`
            m = _SGLANG_INSIDE.search(line, pos + 1)
            if m:
                inner = self.split(line[m.start():])
                return Prefix(inner.ts, inner.rank, inner.engine or engine, None, inner.message)
        return Prefix(normalise_ts(ts) if ts else None, None, engine, None, line[pos:])
