"""One log line -> a record, as a grammar says (`dash.core.log.grammar`); pure, never raises.

`LineParser(grammar).parse(text, lineno)` returns a record dict with `kind` in {"decode",
"prefill", "event", "unparsed"} and the common keys `line`, `ts`, `rank`, `engine`, or None
for a line of no interest (uvicorn access lines, progress bars, blank lines). A line that looks
like stats but does not parse is an `unparsed` record, so format drift shows instead of
vanishing. Lines are capped in length before any regex runs.

`keywords` / `interest` are derived from the grammar: every literal a stats head, a hint or an
event phrase needs. A line without one of them is never a record, which lets a reader skip the
bulk of a large log at C speed; a phrase added to the grammar adds its literals here itself.
"""

from __future__ import annotations

import re
from typing import Any

from dash.core.log.prefix import Prefix, PrefixReader, clean
from dash.core.log.stats import claims, damage, parse_stats
from dash.core.log.syntax import STATS_PREFILTER, Grammar, Phrase, StatsFamily, keyword_pattern

Record = dict[str, Any]

MAX_LINE_CHARS = 32_768  # server_args dumps run to ~10 KB; anything longer is cut
MAX_TEXT_CHARS = 2_000  # `message` / `text` kept in a record


class LineParser:
    """The per-line parser of one grammar. Picklable: it is rebuilt from the grammar."""

    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar
        self.prefixes = PrefixReader(grammar.prefixes)
        self.keywords = grammar.keywords()
        self.interest_words = (*self.keywords, *STATS_PREFILTER)
        """What `interest` looks for: a line with none of these is no record."""
        interest = keyword_pattern(self.interest_words)
        self.interest = re.compile(interest)
        self.interest_bytes = re.compile(interest.encode())
        self.hints = grammar.hints()
        self.heads = re.compile(keyword_pattern(grammar.heads()))
        self.families: tuple[StatsFamily, ...] = grammar.families
        self.phrases: tuple[Phrase, ...] = grammar.phrases
        self.foreign = grammar.prefixes.foreign
        self.code_line = re.compile(grammar.prefixes.code_line)
        self.unread = grammar.prefixes.unread
        self.foreign_phrases = grammar.foreign_phrases()

    def __reduce__(self) -> tuple[type, tuple[Grammar]]:
        return LineParser, (self.grammar,)

    def parse(self, text: str, lineno: int = 0) -> Record | None:
        """One log line -> a record, or None for a line of no interest. Never raises."""
        raw = text[:MAX_LINE_CHARS]
        if not self.interest.search(raw):
            return None
        line = clean(raw)
        pre = self.prefixes.split(line)
        return self.read_message(pre, line, lineno)

    def read_message(self, pre: Prefix, line: str, lineno: int) -> Record | None:
        """The record of a line split into prefix and message (`line`: the cleaned line)."""
        msg = pre.message
        fam = next((f for f in self.families if claims(f, msg)), None)
        if fam is not None:
            fields, head = parse_stats(fam, msg)
            if fields is not None:
                rec = _base(fam.kind, lineno, pre, pre.engine or fam.engine)
                rec.update(fields)
                problems = damage(fam, msg, fields, head, self.heads)
                if problems:  # read, and counted: a cut, glued or unknown-prefix line
                    rec["incomplete"] = problems
                    rec["text"] = line[:MAX_TEXT_CHARS]
                return rec
        event = None if msg.startswith("    ") and self.code_line.match(msg) else \
            self.event(msg, pre.level)
        if event is not None:
            rec = _base("event", lineno, pre, pre.engine or "sglang")
            rec["event"] = event.pop("event")
            rec["message"] = msg.strip()[:MAX_TEXT_CHARS]
            rec.update(event)
            if pre.process and not rec.get("component"):
                rec["component"] = pre.process  # the process whose line it is
            return rec
        if (any(h in msg for h in self.hints) or self.grammar.carries_stats(msg)) \
                and not any(u in msg for u in self.unread):
            rec = _base("unparsed", lineno, pre, pre.engine or "sglang")
            rec["text"] = line[:MAX_TEXT_CHARS]
            return rec
        return None

    def event(self, msg: str, level: str | None) -> dict[str, Any] | None:
        """Event fields for a message (the first phrase that reads it), or None."""
        phrases = self.foreign_phrases if msg.startswith(self.foreign) else self.phrases
        for phrase in phrases:
            got = phrase.read(msg, level)
            if got is not None:
                return got
        return None


def _base(kind: str, lineno: int, pre: Prefix, engine: str) -> Record:
    return {"kind": kind, "line": lineno, "ts": pre.ts, "rank": pre.rank, "engine": engine}
