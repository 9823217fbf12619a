"""What one output record says about its sample, and what a read of output files hands over.

A `Sample` is small (no text): the figures the statistics need. `SampleBatch` is one read of
one partition's output file: its new samples, its invalid lines and its last few raw lines (for
the sample view); it crosses from the reader's thread to the one that owns the run state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dash.core.samples.reasoning import ReasoningState

Finish = Literal["stop", "length", "abort", "error", "filter", "tool", "other"]
"""A finish reason in one vocabulary: `length` is "stopped at the token limit" (truncated)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample of a record (a batch line or a record with n > 1 choices holds several)."""

    shape: str
    """Which record shape it was read as: openai-chat, sglang, vllm-offline, flat, ..."""
    error: str | None = None
    """The record's error message (an error record has no usable text)."""
    finish: Finish | None = None
    finish_raw: str | None = None
    tokens: int | None = None
    """Completion (output) tokens, where the record has them."""
    chars: int | None = None
    """Characters of the text (reasoning included); None when the record has no text."""
    prompt_tokens: int | None = None
    empty: bool = False
    """No answer: the text is empty or whitespace once the reasoning is taken out."""
    reasoning: ReasoningState | None = None
    """None when the record has no text to look in."""
    limit: int | None = None
    """The max-token limit, when the record says it (a request echo, SGLang's finish length)."""


@dataclass(frozen=True, slots=True)
class InvalidLine:
    """A complete line that is not JSON (a crashed writer's half line, a stray print)."""

    offset: int
    """Byte offset of the line in its file."""
    line: int | None
    """1-based line number, when the lines before it were counted."""
    head: str
    """Its first characters, as read (shown literally)."""
    reason: str


@dataclass(frozen=True, slots=True)
class RawSample:
    """One raw line kept for the sample view."""

    text: str
    offset: int
    line: int | None


@dataclass(frozen=True, slots=True)
class FieldHits:
    """How often a configured field path (`[outputs]`) matched, over the records read."""

    field: str
    path: str
    hits: int
    misses: int


@dataclass(frozen=True, slots=True)
class SampleBatch:
    """One read of one partition's output file."""

    name: str
    path: str
    restart: bool = False
    """Reading started again (first sight, truncation, replacement): earlier figures are void."""
    backfill: bool = False
    """These lines were read from the file's end at a (re)start: already there, not arrivals."""
    lines: int = 0
    """Complete lines read."""
    samples: tuple[Sample, ...] = ()
    invalid: tuple[InvalidLine, ...] = ()
    invalid_count: int = 0
    """Invalid lines in this read (only the last few are kept in `invalid`)."""
    unknown: int = 0
    """Valid JSON lines in which no known field was found."""
    oversized: int = 0
    """Lines too long to read as samples (they are still counted by the line counter)."""
    latest: tuple[RawSample, ...] = ()
    fields: tuple[FieldHits, ...] = ()
    skipped_bytes: int = 0
    """Bytes jumped over (a burst larger than the reader catches up with): not in the figures."""
