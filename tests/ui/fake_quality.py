"""Output quality for the frozen fake run: B2 and B3 with realistic figures, and last samples
that include a hostile one (markup, escape sequences, control characters, a 1 MB string)."""

from __future__ import annotations

import json

from dash.core.samples.model import InvalidLine, RawSample, Sample, SampleBatch
from dash.core.samples.snapshot import QualitySnapshot
from dash.core.state.quality import QualityTracker

HOSTILE = json.dumps({
    "id": "B2_opencodeinstruct-004210",
    "text": "<think>\nThe user wrote [bold red]hello[/] and \x1b[31mred\x1b[0m; an OSC title "
            "\x1b]0;pwned\x07, a bell \x07, a C1 CSI \x9b2J, a right-to-left override \u202e"
            "txt.exe, a zero-width\u200bspace.\n</think>\n\n[/nonsense] " + "A" * 1_048_576,
    "meta_info": {"id": "5f1c0c0e2b7a4c1f", "finish_reason": {"type": "length", "length": 10240},
                  "prompt_tokens": 812, "completion_tokens": 10240, "cached_tokens": 512,
                  "e2e_latency": 93.41},
}, ensure_ascii=False)


def _plain(i: int) -> str:
    return json.dumps({"id": f"B2_opencodeinstruct-{4202 + i:06d}",
                       "text": f"<think>\nstep {i}\n</think>\n\ndef solve():\n    return {i}\n",
                       "meta_info": {"id": f"{i:016x}", "finish_reason": {"type": "stop",
                                                                           "matched": 1},
                                     "prompt_tokens": 900 + i, "completion_tokens": 700 + 9 * i}})


def _samples(n: int, every_cut: int, every_bare: int) -> tuple[Sample, ...]:
    out = []
    for i in range(n):
        cut = i % every_cut == 0
        out.append(Sample(shape="sglang", finish="length" if cut else "stop",
                          finish_raw="length" if cut else "stop",
                          tokens=10240 if cut else 380 + (i * 37) % 1500, chars=3000,
                          prompt_tokens=700 + (i * 53) % 1200, empty=False,
                          reasoning="absent" if i % every_bare == 0 else "present",
                          limit=10240 if cut else None))
    return tuple(out)


def qualities() -> dict[str, QualitySnapshot]:
    tr = QualityTracker()
    latest = tuple(RawSample(_plain(i), 1000 + i, 4202 + i) for i in range(7)) + (
        RawSample(HOSTILE, 99_000, 4210),)
    tr.apply([
        SampleBatch("B2_opencodeinstruct", "b2", restart=True, backfill=True, lines=301,
                    samples=_samples(300, 9, 50), invalid_count=1,
                    invalid=(InvalidLine(81_220, 3977, '{"id": "B2_opencodeinstruct-0039',
                                         "Unterminated string starting at column 7"),),
                    latest=latest),
        SampleBatch("B3_agent", "b3", restart=True, backfill=True, lines=300,
                    samples=_samples(300, 60, 40), latest=latest[:3]),
    ], 0.0)
    return {name: q for name in tr.names() if (q := tr.snapshot(name, 0.0)) is not None}
