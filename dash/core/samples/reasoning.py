"""Reasoning in a sample's text: the think markers of each model family, and what they enclose.

Without a reasoning parser on the server (SGLang's `/generate` never runs one), a reasoning
model's text holds its markers: `<think>...</think>` (DeepSeek-R1, Qwen3, GLM, Kimi, MiniMax),
only the closing `</think>` when the chat template opened it in the prompt (R1, QwQ,
Qwen3-Thinking), `<seed:think>`, `[THINK]`, `◁think▷`, Cohere's `<|START_THINKING|>`, gpt-oss's
harmony channels (and their degraded `analysis...assistantfinal` form when special tokens are
skipped), Granite's plain phrases. The families are described once, here, as (start, end) pairs;
a new family is one more pair.

`split` tells four cases apart: `present` (closed, with text inside), `empty` (closed, nothing
inside), `open` (started and never closed: cut off while reasoning) and `absent`.
"""

from __future__ import annotations

import re
from typing import Literal

ReasoningState = Literal["present", "empty", "open", "absent"]

PAIRS: tuple[tuple[str, str], ...] = (
    ("<think>", "</think>"),
    ("<seed:think>", "</seed:think>"),
    ("<mm:think>", "</mm:think>"),
    ("◁think▷", "◁/think▷"),
    ("[THINK]", "[/THINK]"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("<|channel|>analysis<|message|>", "<|start|>assistant<|channel|>final<|message|>"),
    ("<|channel>thought", "<channel|>"),
    ("<|open|>think<|sep|>", "<|close|>think<|sep|>"),
    ("<|begin_of_thought|>", "<|end_of_thought|>"),
    ("<|inner_prefix|>", "<|inner_suffix|>"),
    ("<thinking>", "</thinking>"),
    ("<reasoning>", "</reasoning>"),
    ("Here is my thought process:", "Here is my response:"),
)
"""(start, end) markers by family. An end marker alone counts: the template opened it."""

START_WINDOW = 256
"""Start markers are looked for among the text's first characters (where models put them)."""

_TAG_ENDS = re.compile("<(?:" + "|".join(
    re.escape(end[1:]) for _, end in PAIRS if end.startswith("<")) + r"|\|channel\|>final<\|message\|>)")
"""End markers that are tags, found alone too (a template that opened the block in the prompt).
One `<` prefix: the search skips to each `<` at C speed (a plain alternation is 15x slower)."""
_OTHER_ENDS = {start: end for start, end in PAIRS if not end.startswith("<")}
"""Plain-text end markers: looked for only after their start marker."""
_STARTS = tuple(start for start, _ in PAIRS)
_HARMONY_DEGRADED = re.compile(r"analysis.*?assistantfinal", re.S)
"""gpt-oss with special tokens skipped: `analysis<reasoning>assistantfinal<answer>`."""


_NON_SPACE = re.compile(r"\S")
"""The first character `str.strip` keeps (both use Unicode's whitespace): found in place, where
`strip()` would copy a 16 KB text to see whether anything is left."""
_FIND_ENDS = 8
"""`<` looked at one by one with `str.find` (C's memchr) before the end-marker search takes over:
a text holds a few, and one full of code or HTML goes back to the regex's own loop."""


def split(text: str) -> tuple[ReasoningState, str]:
    """The reasoning state of `text` and the answer that follows the reasoning."""
    state, at = _cut(text)
    return state, "" if at is None else text[at:]


def answered(text: str) -> tuple[ReasoningState, bool]:
    """The reasoning state of `text`, and whether an answer follows the reasoning (not blank):
    `split`'s, without copying the text or its answer."""
    state, at = _cut(text)
    return state, at is not None and _NON_SPACE.search(text, at) is not None


def _cut(text: str) -> tuple[ReasoningState, int | None]:
    """The reasoning state and where the answer starts (None: no answer, `split`'s "")."""
    head = text[:START_WINDOW].lstrip()
    found = _tag_end(text)
    if found is None:
        other = next((e for st, e in _OTHER_ENDS.items() if head.startswith(st)), None)
        at = text.find(other) if other is not None else -1
        found = (at, other) if other is not None and at >= 0 else None
    if found is not None:
        end_at, marker = found
        begin = 0
        for start in _STARTS:
            at = text.find(start, 0, end_at)
            if at >= 0:
                begin = at + len(start)
                break
        state: ReasoningState = "present" if _NON_SPACE.search(text, begin, end_at) else "empty"
        # Several blocks (a model that thinks again before answering): the answer is what
        # follows the last end marker, and a block opened after it is cut-off reasoning.
        answer = text.rfind(marker) + len(marker)
        first = _NON_SPACE.search(text, answer)
        return state, None if first is not None and text.startswith(_STARTS, first.start()) \
            else answer
    if head.startswith("analysis"):
        m = _HARMONY_DEGRADED.match(head if len(text) <= START_WINDOW else text.lstrip())
        if m is not None:
            inside = m.group(0)[len("analysis"):-len("assistantfinal")]
            lead = len(text) - len(text.lstrip())
            return ("present" if inside.strip() else "empty"), lead + m.end()
    if head.startswith(_STARTS):
        return "open", None
    return "absent", 0


def _tag_end(text: str) -> tuple[int, str] | None:
    """The first end marker that is a tag: where it starts, and its text."""
    at = text.find("<")
    for _ in range(_FIND_ENDS):
        if at < 0:
            return None
        m = _TAG_ENDS.match(text, at)
        if m is not None:
            return at, m.group(0)
        at = text.find("<", at + 1)
    m = _TAG_ENDS.search(text, at) if at >= 0 else None
    return (m.start(), m.group(0)) if m is not None else None
