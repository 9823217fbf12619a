"""The errors a user is told about in one line (exit code 2), shared by every command.

They live in the core so that the command line, `replay`, `sim` and the config schema can raise
them without importing each other.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UsageError(Exception):
    """Bad arguments or input named on the command line: printed as one line, exit 2."""


class ConfigError(UsageError, ValueError):
    """A configuration problem, stated in one line for the user."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the known name closest to a misspelt `name`, else ``."""
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
