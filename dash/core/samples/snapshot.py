"""The frozen picture of one partition's outputs: what the screen, `--json` and Prometheus show."""

from __future__ import annotations

from dataclasses import dataclass

from dash.core.samples.model import FieldHits, InvalidLine, RawSample
from dash.core.samples.stats import QualityFigures


@dataclass(frozen=True, slots=True)
class QualitySnapshot:
    """One partition's output statistics at one instant."""

    window: QualityFigures = QualityFigures()
    """The last samples (`dash.core.samples.stats.WINDOW`)."""
    total: QualityFigures = QualityFigures()
    """Every line read since kdash started (or since the file was rewritten)."""
    shape: str | None = None
    """The record shape most samples were read as (openai-chat, sglang, flat...)."""
    limits: tuple[int, ...] = ()
    """Token limits the records name, most often seen first."""
    last_error: str | None = None
    last_invalid: InvalidLine | None = None
    oversized: int = 0
    skipped_bytes: int = 0
    """Bytes of a burst that were jumped over: the figures leave those lines out."""
    latest: tuple[RawSample, ...] = ()
    """The last few raw lines, oldest first (the sample view)."""
    fields: tuple[FieldHits, ...] = ()
    """Each configured field path and how often it matched."""
    tokens_per_s: float | None = None
    """Output tokens arriving per second in this partition's samples (recent)."""
    reasoning_expected: bool = False
    """Whether these records should carry reasoning (configured, or earlier records did)."""
    reasoning_seen_in: str | None = None
    """The partition whose samples carried reasoning (this one first), which sets the
    expectation when the config does not."""
    expect_configured: bool = False
    """`reasoning_expected` comes from `[outputs] expect_reasoning`, not from earlier records."""
    configured_limit: int | None = None
    """`[outputs] max_tokens`: the client's limit when neither records nor command line say."""

    @property
    def unmatched(self) -> tuple[FieldHits, ...]:
        """Configured paths that matched no record read so far."""
        return tuple(f for f in self.fields if f.hits == 0 and f.misses > 0)
