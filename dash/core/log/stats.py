"""Periodic stats lines, read by field name as a `StatsFamily` of the grammar describes them.

Parsed by fields, never by position: the text after the head is split on `", "`, each item on
its first `": "`, and the names are looked up in the family's table. Unknown names are ignored,
so fields that versions insert, drop or reorder (`cuda graph`, `accept len`, `largest-len`, PD
queues, `#pending-token`, a trailing `", "` or not) never break a line.
"""

from __future__ import annotations

import re
from typing import Any

from dash.core.log.syntax import PAIR, StatsFamily

__all__ = ["PAIR", "claims", "damage", "finish", "parse_stats", "read_fields"]

Fields = dict[str, Any]


def claims(fam: StatsFamily, msg: str) -> bool:
    """Whether the family claims this message (the first family that does reads it)."""
    return any(t in msg for t in fam.triggers) or (bool(fam.starts) and msg.startswith(fam.starts))


def read_fields(fam: StatsFamily, body: str) -> Fields:
    """The fields of the items in `body`: the first item of each record key wins."""
    out: Fields = {}
    for key, value in fam.pair_re.findall(body):
        f = fam.field_for(key)
        if f is not None and f.key not in out:
            out[f.key] = None if f.many else f.conv.read(value)
    for f, whole in fam.lists:
        m = whole.search(body) if f.key in out and out[f.key] is None else None
        if m is not None:
            out[f.key] = f.conv.read(m.group(1))
    return out


def finish(fam: StatsFamily, rec: Fields, head: re.Match[str] | None) -> Fields | None:
    """Head numbers, fallbacks, the family's checks and its schema; None when it fails."""
    if head is not None:
        for hf in fam.head_fields:
            text = head.group(hf.group)
            if text is not None and (not hf.fill or rec.get(hf.key) is None):
                rec[hf.key] = hf.read(text)
    for target, source in fam.fallbacks:
        if rec.get(target) is None and rec.get(source) is not None:
            rec[target] = rec[source]
    if any(rec.get(k) is None for k in fam.require_all):
        return None
    if any(all(rec.get(k) is None for k in group) for group in fam.require_any):
        return None
    for k in fam.schema:
        rec.setdefault(k, None)
    return rec


def parse_stats(fam: StatsFamily, msg: str) -> tuple[Fields | None, re.Match[str] | None]:
    """The fields of a message the family claims (None when its core fields are missing), and
    where its head is."""
    m = fam.head_re.search(msg)
    if m is None and fam.head_required:
        return None, None
    return finish(fam, read_fields(fam, msg[m.end():] if m else msg), m), m


def damage(fam: StatsFamily, msg: str, rec: Fields, head: re.Match[str] | None,
           heads: re.Pattern[str]) -> list[str]:
    """What is wrong with a stats line the family read: a field it always prints is missing
    (a line cut short, a value the converter refused), text stands before its head (a prefix
    no rule peels: its stamp is lost), or a second head follows (two lines glued into one)."""
    out = [f"no {k}" for k in fam.expect if rec.get(k) is None and not _unmeasured(fam, msg, k)]
    if head is not None and head.start() and msg[:head.start()].strip():
        out.append("text before the head")
    first = heads.search(msg)
    if first is not None and heads.search(msg, first.end()) is not None:
        out.append("two stats lines in one")
    return out


_UNMEASURED = ("nan", "inf", "-inf")
"""What Python prints for a figure a server had nothing to measure with (vLLM's draft
acceptance rate with no drafts in the interval: `nan%`; SGLang's occupancy before its first
window): no value, and no sign of a damaged line."""


def _unmeasured(fam: StatsFamily, msg: str, key: str) -> bool:
    for f in fam.fields:
        if f.key == key:
            at = msg.find(f"{f.printed}: ")
            if at >= 0 and msg[at + len(f.printed) + 2:].startswith(_UNMEASURED):
                return True
    return False

