"""Record traits read beside the fields: a refusal, reasoning counted but not shown, the
responses of a best-of-n record (field names as `dash.core.samples.shapes` cites them)."""

from __future__ import annotations

from typing import Any

from dash.core.samples.shapes import CANDIDATE_KEYS, Rec, count, dig


def reasoned(body: Rec) -> bool:
    """The record counts reasoning tokens it does not show: OpenAI's reasoning models return
    only `usage.completion_tokens_details.reasoning_tokens` (Responses:
    `usage.output_tokens_details`), SGLang `usage.reasoning_tokens` / `meta_info`'s."""
    usage = body.get("usage")
    found = (dig(usage, "completion_tokens_details", "reasoning_tokens"),
             dig(usage, "output_tokens_details", "reasoning_tokens"),
             dig(usage, "reasoning_tokens"), dig(body, "meta_info", "reasoning_tokens"))
    return any(bool(count(n)) for n in found)


def candidates(body: Rec) -> tuple[str, list[Any]] | None:
    """(key, items) of a best-of-n record: a list of strings, or of records with a text."""
    for key in CANDIDATE_KEYS:
        items = body.get(key)
        if isinstance(items, list) and items and (
                isinstance(items[0], str) or (isinstance(items[0], dict)
                                              and not shapes_of_choice(items[0]))):
            return key, items
    return None


def shapes_of_choice(item: Rec) -> bool:
    """A vLLM `CompletionOutput` or a chat choice: read in place, not as a candidate."""
    return "token_ids" in item or "message" in item or "index" in item or isinstance(
        item.get("content"), dict)


CANDIDATE_SET = frozenset(CANDIDATE_KEYS)
