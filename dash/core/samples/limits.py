"""Token limits named on a client's command line: `--short-max-tokens 10240`, `--max-tokens=4096`.

The class of flag, not one spelling: any option whose name holds `max` (or `limit`) and ends in
`tokens` (`--max-new-tokens`, `--max_completion_tokens`, `--long-max-tokens`,
`--short-limit-tokens`), followed by a whole number, as one word (`=`) or the next.
"""

from __future__ import annotations

import re

_FLAG = re.compile(r"(?<!\S)(--?[A-Za-z0-9_-]*(?:max|limit)[A-Za-z0-9_-]*tokens)(?:=|\s+)(\d+)\b")


def limit_flags(cmdline: str) -> tuple[tuple[str, int], ...]:
    """(flag, value) of each token-limit option in `cmdline`, in order, duplicates dropped."""
    seen: dict[str, int] = {}
    for flag, value in _FLAG.findall(cmdline):
        seen.setdefault(flag, int(value))
    return tuple(seen.items())


def name_limit(limit: int | None, flags: tuple[tuple[str, int], ...]) -> str | None:
    """`--short-max-tokens 10240` when a flag's value is the limit; all the flags when the limit
    is unknown; None when there is nothing to name."""
    if limit is not None:
        match = [f for f, v in flags if v == limit]
        if match:
            return f"{match[0]} {limit}"
        return None
    return ", ".join(f"{f} {v}" for f, v in flags) or None
