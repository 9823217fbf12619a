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


def split(text: str) -> tuple[ReasoningState, str]:
    """The reasoning state of `text` and the answer that follows the reasoning."""
    head = text[:START_WINDOW].lstrip()
    end = _TAG_ENDS.search(text)
    if end is None:
        other = next((e for st, e in _OTHER_ENDS.items() if head.startswith(st)), None)
        end = re.search(re.escape(other), text) if other is not None else None
    if end is not None:
        inside = text[:end.start()]
        for start in _STARTS:
            at = inside.find(start)
            if at >= 0:
                inside = inside[at + len(start):]
                break
        state: ReasoningState = "present" if inside.strip() else "empty"
        # Several blocks (a model that thinks again before answering): the answer is what
        # follows the last end marker, and a block opened after it is cut-off reasoning.
        last = text.rfind(end.group(0))
        answer = text[last + len(end.group(0)):]
        return state, "" if answer.lstrip().startswith(_STARTS) else answer
    if head.startswith("analysis"):
        m = _HARMONY_DEGRADED.match(head if len(text) <= START_WINDOW else text.lstrip())
        if m is not None:
            inside = m.group(0)[len("analysis"):-len("assistantfinal")]
            return ("present" if inside.strip() else "empty"), text.lstrip()[m.end():]
    if head.startswith(_STARTS):
        return "open", ""
    return "absent", text
