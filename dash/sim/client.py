"""The simulated inference client: partitions, JSONL output lines and its tqdm log (pure).

The client works through the partitions in order with many requests in flight; each finished
request becomes one JSONL line in its partition's output. Its log carries `Resuming: N already
done` and a tqdm bar rewritten with `\\r`, as tqdm does when its file is not a terminal.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

PARTITIONS: tuple[tuple[str, int, int], ...] = (
    ("B1_glaive", 10_000, 10_000),
    ("B2_opencodeinstruct", 5_000, 1_374),
    ("B3_agent", 3_000, 0),
    ("B4_deepseek", 4_000, 0),
    ("B5_synth", 2_000, 0),
)
"""(name, total prompts, outputs already written when the run starts)."""
MAX_TOKENS: dict[str, int] = {"B1_glaive": 10_240, "B2_opencodeinstruct": 10_240,
                              "B3_agent": 16_384, "B4_deepseek": 16_384, "B5_synth": 10_240}
"""The client's limits per partition (`--short-max-tokens 10240`, `--long-max-tokens 16384`)."""
EOS_TOKEN = 1
"""The end-of-sequence token id a stop matches (DeepSeek-V3's `<｜end▁of▁sentence｜>`)."""

_WORDS = ("the", "function", "returns", "a", "list", "of", "values", "we", "first", "check",
          "whether", "input", "is", "empty", "then", "loop", "over", "each", "item", "and",
          "compute", "result", "using", "dictionary", "to", "count", "occurrences", "finally",
          "sort", "by", "key", "this", "runs", "in", "linear", "time", "here", "is", "code")
_BAR = " ▏▎▍▌▋▊▉█"


def response_text(rng: random.Random, tokens: int) -> str:
    """Plausible response prose, about one word per eight tokens, capped (files stay small)."""
    n = max(4, min(48, tokens // 8))
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + "."


@dataclass(frozen=True, slots=True)
class SampleStyle:
    """How a simulated sample looks beyond its figures."""

    reasoning: bool = True
    """The text carries the model's `<think>...</think>` block (a thinking model)."""
    size: int | None = None
    """Pad the text to about this many bytes (realistic long samples, for benchmarks)."""


def sample_text(rng: random.Random, words: str, completion_tokens: int, finish: str,
                style: SampleStyle) -> str:
    """The generated text: reasoning then answer; a sample cut at its limit ends mid-way."""
    think = " ".join(rng.choice(_WORDS) for _ in range(12)).capitalize() + "."
    answer = words
    if style.size is not None:
        pad = max(0, style.size - len(words) - len(think) - 40)
        think += (" " + " ".join(rng.choice(_WORDS) for _ in range(pad // 5 + 1)))[:pad]
    if finish == "length":
        if not style.reasoning or rng.random() < 0.5:
            answer = answer[: max(1, len(answer) // 2)]  # cut mid-answer
        else:
            return f"<think>\n{think}" if style.reasoning else think  # cut while thinking
    return f"<think>\n{think}\n</think>\n\n{answer}" if style.reasoning else f"{think} {answer}"


def output_line(name: str, index: int, rng: random.Random, prompt_tokens: int,
                completion_tokens: int, finish: str, *, text_rng: random.Random | None = None,
                style: SampleStyle = SampleStyle()) -> str:
    """One finished sample as a JSONL line (with its newline): what the client writes for a
    request to SGLang's `/generate` (its `text` and `meta_info`), under its own id.

    `rng` draws what earlier simulations drew (the answer's words); `text_rng` the rest.
    """
    words = response_text(rng, completion_tokens)
    more = text_rng or random.Random(index)
    limit = MAX_TOKENS.get(name, 10_240)
    tokens = limit if finish == "length" else completion_tokens
    reason: dict[str, object] = ({"type": "length", "length": limit} if finish == "length"
                                 else {"type": "stop", "matched": EOS_TOKEN})
    doc = {
        "id": f"{name}-{index:06d}",
        "partition": name,
        "text": sample_text(more, words, tokens, finish, style),
        "meta_info": {
            "id": f"{more.getrandbits(64):016x}", "finish_reason": reason,
            "prompt_tokens": prompt_tokens, "completion_tokens": tokens,
            "cached_tokens": prompt_tokens // 4, "e2e_latency": round(tokens / 38.0, 2),
        },
    }
    return json.dumps(doc, ensure_ascii=False) + "\n"


def input_line(name: str, index: int) -> str:
    """One prompt of a partition's input file (with its newline)."""
    doc = {"id": f"{name}-{index:06d}", "messages": [
        {"role": "user", "content": f"Task {index} of {name}: write and explain the code."}]}
    return json.dumps(doc) + "\n"


def _clock(seconds: float) -> str:
    s = int(seconds)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def tqdm_line(desc: str, n: int, total: int, elapsed: float, rate: float | None) -> str:
    """tqdm's default bar at its default width of 10 cells (no terminal), without the `\\r`."""
    frac = n / total if total else 1.0
    eighths = int(frac * 10 * 8)
    full, part = divmod(eighths, 8)
    bar = "█" * full + (_BAR[part] if full < 10 else "")
    bar = bar.ljust(10)
    if rate:
        remaining = _clock((total - n) / rate)
        rate_text = f"{rate:5.2f}it/s"
    else:
        remaining, rate_text = "?", "?it/s"
    return (f"{desc}: {frac * 100:3.0f}%|{bar}| {n}/{total} "
            f"[{_clock(elapsed)}<{remaining}, {rate_text}]")


@dataclass(slots=True)
class Partition:
    """Progress of one partition."""

    name: str
    total: int
    done: int
    started_at: float | None = None
    initial: int = 0


class ClientModel:
    """What the client writes, driven by the simulation's completions."""

    def __init__(self, stall: tuple[str, float] | None = None) -> None:
        self.parts = [Partition(n, total, done, initial=done) for n, total, done in PARTITIONS]
        self.current: int | None = None
        self.started = False
        self._stall = stall
        self._bar_open = False

    def partition(self) -> Partition | None:
        return None if self.current is None else self.parts[self.current]

    def start(self, t: float, inputs_dir: str) -> str:
        """The client's first lines; picks the first unfinished partition."""
        self.started = True
        out = [f"Loading prompts from {inputs_dir}\n"]
        for p in self.parts:
            if p.done >= p.total:
                out.append(f"{p.name}: all {p.total} already done, skipping\n")
        out.append(self._next(t))
        return "".join(out)

    def _next(self, t: float) -> str:
        for i, p in enumerate(self.parts):
            if p.done < p.total:
                self.current, p.started_at, p.initial = i, t, p.done
                self._bar_open = True
                return (f"Resuming: {p.done} already done\n"
                        f"\r{tqdm_line(p.name, p.done, p.total, 0.0, None)}")
        self.current = None
        return "All partitions done.\n"

    def stalled(self, t: float) -> bool:
        """True when the current partition's writer is stuck (the stalled-output scenario)."""
        p = self.partition()
        return bool(self._stall and p and p.name == self._stall[0] and t >= self._stall[1])

    def record(self, t: float, n: int) -> tuple[str, int]:
        """Count `n` finished samples of the current partition; returns (log text, accepted)."""
        p = self.partition()
        if p is None or n <= 0 or self.stalled(t):
            return "", 0
        take = min(n, p.total - p.done)
        p.done += take
        elapsed = t - (p.started_at or t)
        rate = (p.done - p.initial) / elapsed if elapsed > 0 else None
        text = f"\r{tqdm_line(p.name, p.done, p.total, elapsed, rate)}"
        if p.done >= p.total:
            self._bar_open = False
            text += "\n" + self._next(t)
        return text, take

    def warn(self, message: str) -> str:
        """A warning line, on a fresh line after an open progress bar."""
        lead = "\n" if self._bar_open else ""
        self._bar_open = False
        return f"{lead}{message}\n"

    def reopen_bar(self, t: float) -> str:
        """Redraw the bar after warnings (the next tqdm refresh)."""
        p = self.partition()
        if p is None or self._bar_open:
            return ""
        self._bar_open = True
        elapsed = t - (p.started_at or t)
        return f"\r{tqdm_line(p.name, p.done, p.total, elapsed, None)}"
