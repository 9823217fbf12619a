"""The building blocks of a log grammar (`dash.core.log.grammar` holds kdash's own).

A `Grammar` names what kdash reads in a server log: the line prefixes (`Prefixes`), the stats
families (`StatsFamily`, each a head and a table of `Field`s) and the event phrases (`Phrase`).
Everything that reads lines is derived from one: the per-line parser, the keyword prefilter,
the lines skipped unread, and the bulk reader's compiled shapes. All of it is frozen data and
plain functions, so a grammar can be pickled into a worker process.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from dash.core.log.convert import Conv

Fields = dict[str, Any]


@dataclass(frozen=True)
class Field:
    """One `name: value` item of a stats line: `printed` as the server prints it, `key` in the
    record. `unit`: what may follow the number (` tokens/s`, `%`, ` reqs`). With `suffix`,
    any printed name ending in `printed` (`XPU KV cache usage`) is this field."""

    printed: str
    key: str
    conv: Conv
    unit: str = ""
    suffix: bool = False


@dataclass(frozen=True)
class HeadField:
    """A number inside a family's head (`Prefill batch(mixed #running-req: 3)`): the head
    pattern's group `group`, converted with `read`. `fill`: only where the fields left `key`
    None; otherwise it is set after the fields."""

    group: str
    key: str
    read: Callable[[str], Any]
    fill: bool = False


@dataclass(frozen=True)
class StatsFamily:
    """Periodic stats lines of one shape family.

    A message belongs to the first family with one of its `triggers` in it (or starting with
    one of `starts`); a family that claims a line but cannot read it makes it `unparsed`,
    as does any `hints` text. The fields are read after `head` (searched; fields are read from
    the message start when the head is not `head_required` and absent), by name, in any order;
    the first item of a record key wins, unknown names are ignored. Then `head_fields`, then
    `fallbacks` (target, source: the source's value where the target is None), then the check:
    every key of `require_all` and one of each group in `require_any` is not None. `schema`
    keys are always in the record (None when not printed)."""

    name: str
    kind: str
    engine: str
    triggers: tuple[str, ...]
    head: str
    fields: tuple[Field, ...]
    schema: tuple[str, ...]
    starts: tuple[str, ...] = ()
    head_required: bool = True
    head_fields: tuple[HeadField, ...] = ()
    fallbacks: tuple[tuple[str, str], ...] = ()
    require_all: tuple[str, ...] = ()
    require_any: tuple[tuple[str, ...], ...] = ()
    hints: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    """Messages it must read (the grammar's tests use them)."""

    @cached_property
    def head_re(self) -> re.Pattern[str]:
        return re.compile(self.head)

    @cached_property
    def table(self) -> dict[str, Field]:
        """Printed name -> field; the first listed for a printed name wins."""
        out: dict[str, Field] = {}
        for f in self.fields:
            if not f.suffix:
                out.setdefault(f.printed, f)
        return out

    @cached_property
    def suffixes(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.suffix)

    def field_for(self, printed: str) -> Field | None:
        f = self.table.get(printed)
        if f is None:
            for s in self.suffixes:
                if printed.endswith(s.printed):
                    return s
        return f

    def keywords(self) -> tuple[str, ...]:
        return (*self.triggers, *self.starts, *self.hints)


Extract = Callable[[str, "re.Match[str] | None"], "Fields | None"]


@dataclass(frozen=True)
class Phrase:
    """An event phrase family: lines whose message has one of `any` in it, starts with one of
    `starts`, has all of `every`, matches `pattern` (searched; anchor it with `^` to match at
    the start) or comes with a printed level in `levels` (conditions given are all required,
    `any`/`starts` either one). The record is `fields` plus what `extract(message, match)`
    returns; an `extract` that returns None passes the line on to the next phrase.

    `needs`: literal texts the `pattern` cannot match without, for a phrase that has no
    literal of its own; the prefilter is built from every phrase's literals, so a phrase
    without any is refused. `examples` are lines it must read (the grammar's tests use them)."""

    event: str
    any: tuple[str, ...] = ()
    starts: tuple[str, ...] = ()
    every: tuple[str, ...] = ()
    pattern: str | None = None
    levels: tuple[str, ...] = ()
    fields: Fields = field(default_factory=dict)
    extract: Extract | None = None
    needs: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.keywords():
            raise ValueError(f"phrase {self.event!r} names no literal text: the prefilter "
                             "would drop every line it reads (give it `needs`)")

    @cached_property
    def pattern_re(self) -> re.Pattern[str] | None:
        return re.compile(self.pattern) if self.pattern else None

    def keywords(self) -> tuple[str, ...]:
        """Literals one of which is in every line this phrase reads."""
        if self.any or self.starts:
            return (*self.any, *self.starts)
        if self.every:
            return self.every[:1]
        return self.needs or self.levels

    def _literal_in(self, msg: str) -> bool:
        return any(t in msg for t in self.any) or bool(self.starts and msg.startswith(self.starts))

    def read(self, msg: str, level: str | None) -> Fields | None:
        if (self.any or self.starts) and not self._literal_in(msg):
            return None
        if self.every and not all(t in msg for t in self.every):
            return None
        if self.levels and (level not in self.levels or msg[:1] in (" ", "\t", "^", "")):
            return None
        m = None
        if self.pattern_re is not None:
            m = self.pattern_re.search(msg)
            if m is None:
                return None
        if self.extract is None:
            return {"event": self.event, **self.fields}
        got = self.extract(msg, m)
        return None if got is None else {"event": self.event, **self.fields, **got}


@dataclass(frozen=True)
class Prefixes:
    """The line prefixes, peeled from the left (`dash.core.log.prefix`): an outer stamp
    (docker `--timestamps`), a process tag (`processes`: group 1 names the process; its
    engine is the first of `process_engines` whose key is in the lowercased name, else
    `process_default`), then the logger's own prefix: a bracket with a stamp and rank tags,
    a `[gpu_id=N]` tag, vLLM's `LEVEL MM-DD HH:MM:SS [file:line]`, or a stamp first followed
    by a header of level, pid, `[tags file:line]`, `[LEVEL] logger:`. Rank tags are
    `ranks` names followed by `rank_digits`, everywhere."""

    ranks: tuple[str, ...]
    rank_digits: str
    levels: tuple[str, ...]
    bracket_stamp: str
    outer_stamp: str
    processes: tuple[str, ...]
    process_engines: tuple[tuple[str, str], ...]
    process_default: str
    vllm: str
    stamp_first: str
    gpu_tag: str
    foreign: tuple[str, ...]
    """Messages that are the HTTP server's own lines (uvicorn): only `foreign_phrases` read."""
    foreign_phrases: tuple[str, ...]

    @property
    def rank_tag(self) -> str:
        return "(?:" + "|".join(self.ranks) + ")" + self.rank_digits

    @property
    def level_names(self) -> str:
        return "(?:" + "|".join(self.levels) + ")"


@dataclass(frozen=True)
class Grammar:
    """What kdash reads: prefixes, stats families (in the order they claim a line), events."""

    prefixes: Prefixes
    families: tuple[StatsFamily, ...]
    phrases: tuple[Phrase, ...]

    def keywords(self) -> tuple[str, ...]:
        """Every literal a record can come from: a line without one is never a record."""
        out: dict[str, None] = {}
        for fam in self.families:
            out.update(dict.fromkeys(fam.keywords()))
        for ph in self.phrases:
            out.update(dict.fromkeys(ph.keywords()))
        return tuple(out)

    def hints(self) -> tuple[str, ...]:
        """Texts that mark a line as meant to be stats (`unparsed` when no family reads it)."""
        out: dict[str, None] = {}
        for fam in self.families:
            out.update(dict.fromkeys(fam.keywords()))
        return tuple(out)

    def foreign_phrases(self) -> tuple[Phrase, ...]:
        names = set(self.prefixes.foreign_phrases)
        return tuple(p for p in self.phrases if p.event in names)

    def with_field(self, family: str, new: Field) -> Grammar:
        """This grammar with one more field in a family (tests, and a user's extension)."""
        if all(f.name != family for f in self.families):
            raise ValueError(f"no stats family {family!r}")
        fams = tuple(replace(f, fields=(*f.fields, new)) if f.name == family else f
                     for f in self.families)
        return Grammar(self.prefixes, fams, self.phrases)

    def with_phrase(self, new: Phrase, before: str | None = None) -> Grammar:
        """This grammar with one more phrase, tried before the first phrase of event
        `before` (default: last)."""
        phrases = list(self.phrases)
        at = next((i for i, p in enumerate(phrases) if p.event == before), len(phrases))
        phrases.insert(at, new)
        return Grammar(self.prefixes, self.families, tuple(phrases))


def keyword_pattern(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
