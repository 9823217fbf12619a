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
from itertools import islice
from typing import Any

from dash.core.log.convert import Conv

Fields = dict[str, Any]

# `key: value` items separated by `", "`; an item without `": "` (the `swa=M` continuation of
# the 0.4.9 SWA form, stray text) is skipped
PAIR = re.compile(r"(?:^|, )([^,]+?): ([^,]*)")


@dataclass(frozen=True)
class Field:
    """One `name: value` item of a stats line: `printed` as the server prints it, `key` in the
    record. `unit`: what may follow the number (` tokens/s`, `%`, ` reqs`). With `suffix`,
    any printed name ending in `printed` (`XPU KV cache usage`) is this field. With `many`, the
    value is a list that runs on over the items without a name of their own (vLLM's
    `Per-position acceptance rate: 0.81, 0.70, 0.62, Avg Draft ...`)."""

    printed: str
    key: str
    conv: Conv
    unit: str = ""
    suffix: bool = False
    many: bool = False

    def __post_init__(self) -> None:
        if "%" in self.unit:  # the bulk reader would read `0.5%` as 0.5
            raise ValueError(f"field {self.printed!r}: a percent is a ratio the converter "
                             "reads itself (`RATIO`), not a unit")


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
    the first item of a record key wins, unknown names are ignored; items are separated by
    `sep`. Then `head_fields`, then `fallbacks` (target, source: the source's value where the
    target is None), then the check: every key of `require_all` and one of each group in
    `require_any` is not None. `schema` keys are always in the record (None when not printed).
    `expect`: keys every version of the family prints; a record without one of them is read
    but marked incomplete (a cut or damaged line), and counted."""

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
    expect: tuple[str, ...] = ()
    sep: str = ", "
    examples: tuple[str, ...] = ()
    """Messages it must read (the grammar's tests use them)."""

    @cached_property
    def head_re(self) -> re.Pattern[str]:
        return re.compile(self.head)

    @cached_property
    def pair_re(self) -> re.Pattern[str]:
        """`name: value` items between separators (an item without `": "` is skipped)."""
        if self.sep == ", ":
            return PAIR
        sep = re.escape(self.sep)
        return re.compile(f"(?:^|{sep})((?:(?!{sep}).)+?): ((?:(?!{sep}).)*)")

    @cached_property
    def lists(self) -> tuple[tuple[Field, re.Pattern[str]], ...]:
        """The list-valued fields, each with the pattern of its name and whole value."""
        sep = re.escape(self.sep)
        return tuple((f, re.compile(re.escape(f.printed) + f": ((?:(?!{sep}).)*"
                                    f"(?:{sep}(?!(?:(?!{sep}).)*: )(?:(?!{sep}).)*)*)"))
                     for f in self.fields if f.many)

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


_EXCEPTION_LINE = re.compile(r"^((?:[A-Za-z_][\w.]{0,200})?(?:Error|Exception)): ")


def _typed(event: str, msg: str, rec: Fields) -> Fields:
    """A crash or OOM read off a Python exception line (`RuntimeError: CUDA error: an illegal
    memory access was encountered`) keeps the exception's type, as an error line does."""
    if event in ("crash", "oom") and "exception" not in rec:
        m = _EXCEPTION_LINE.match(msg)
        if m is not None:
            rec["exception"] = m.group(1)
    return rec


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
            return _typed(self.event, msg, {"event": self.event, **self.fields})
        got = self.extract(msg, m)
        return None if got is None else _typed(self.event, msg,
                                               {"event": self.event, **self.fields, **got})


@dataclass(frozen=True)
class Prefixes:
    """The line prefixes, peeled from the left (`dash.core.log.prefix`).

    First what a collector adds: a docker compose service column (`collector`), an RFC 3339
    stamp (`outer_stamp`, bare as kubectl / docker `--timestamps` print it or in brackets as CI
    does; then `outer_tail`: a CRI file's `stdout F`, journald's `host ident[pid]: `) or a
    syslog stamp with host (`syslog_stamp`, journald's default). Then a process tag
    (`processes`: group 1 names the process, and may name its ranks; its engine is the first
    of `process_engines` whose key is in the lowercased name, else `process_default`), then
    the logger's own prefix: a bracket with a stamp and rank tags, a `[gpu_id=N]` tag, vLLM's
    `LEVEL MM-DD HH:MM:SS [file:line]`, PyTorch's `[rankN]:[E909 08:45:30.1 file.cpp:12]`, or a
    stamp first (with an optional `zone`) followed by
    a header of level, pid, `[tags file:line]`, `[LEVEL] logger:`. Rank tags are `ranks` names
    followed by `rank_digits`, everywhere. A stamp with a zone is the record's `ts` (it alone
    says when the line was written); otherwise the logger's own stamp is."""

    ranks: tuple[str, ...]
    rank_digits: str
    levels: tuple[str, ...]
    bracket_stamp: str
    collector: str
    outer_stamp: str
    outer_tail: str
    syslog_stamp: str
    processes: tuple[str, ...]
    process_lead: str
    process_dp: str
    """A process name whose number (group 1) is its data-parallel rank."""
    """A tag that may come before the process tag (skipped)."""
    process_engines: tuple[tuple[str, str], ...]
    process_default: str
    vllm: str
    stamp_first: str
    zone: str
    gpu_tag: str
    bracket_name: str
    """A process's name that may follow the bracket's stamp and tags (read per line only)."""
    torch: str
    """PyTorch's C++ prefix: groups rank, level letter, month, day, time (all but the level
    optional)."""
    json_keys: JsonKeys
    code_line: str
    unread: tuple[str, ...]
    """Texts of lines with numbers that are no server stats (not counted unparsed)."""
    """A message that is a traceback's quoted source (read as no event)."""
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
class JsonKeys:
    """Where a JSON log line keeps its parts: the message, the stamp, the level, the process
    (its name may carry ranks, `EngineCore_DP1`) and the logger, whose name's first word says
    the engine (`engines`: (prefix, engine))."""

    message: tuple[str, ...]
    time: tuple[str, ...]
    level: tuple[str, ...]
    process: tuple[str, ...]
    logger: tuple[str, ...]
    engines: tuple[tuple[str, str], ...]


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

    def heads(self) -> tuple[str, ...]:
        """Every family's trigger: a message with two of them is two lines glued into one."""
        return tuple(dict.fromkeys(t for fam in self.families for t in fam.triggers))

    @cached_property
    def stats_item(self) -> re.Pattern[str]:
        """A `name: number` item as the families print theirs: after the start or a separator,
        a name made of the characters their printed names use, `: `, a number. A line with
        `MIN_STATS_ITEMS` of them carries stats, whichever family (known or not) it is."""
        chars = sorted({c for fam in self.families for f in fam.fields for c in f.printed})
        name = "[" + "".join(re.escape(c) for c in chars) + "]{1,60}?"
        seps = "|".join(re.escape(s) for s in sorted({f.sep for f in self.families}))
        return re.compile(rf"(?:^|{seps})({name}): [0-9][0-9.,]*(?:%|\b)")

    def carries_stats(self, msg: str) -> bool:
        items = self.stats_item.finditer(msg)
        return len(list(islice(items, MIN_STATS_ITEMS))) >= MIN_STATS_ITEMS

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


MIN_STATS_ITEMS = 2
_Trie = dict[str, "_Trie"]
STATS_PREFILTER = tuple(f": {d}" for d in "0123456789")
"""What every line with a stats item has (the prefilter's share of `Grammar.stats_item`)."""


def keyword_pattern(words: tuple[str, ...]) -> str:
    """A pattern that finds any of `words` in a text: their trie, so that each position of the
    text costs one test per distinct next character, not one per word. Words are searched
    without their outer spaces (a part of a word is in every text the word is), and a word
    that another one starts with stands for both."""
    trie: _Trie = {}
    for word in filter(None, (w.strip() for w in words)):
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: _Trie) -> str:
        if "" in node:
            return ""  # a word ends here: whatever follows, the text has one
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items())]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return emit(trie) if trie else "(?!)"
