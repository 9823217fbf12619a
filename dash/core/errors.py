"""The errors a user is told about in one line (exit code 2), shared by every command.

They live in the core so that the command line, `replay`, `sim` and the config schema can raise
them without importing each other.
"""

from __future__ import annotations


class UsageError(Exception):
    """Bad arguments or input named on the command line: printed as one line, exit 2."""


class ConfigError(UsageError, ValueError):
    """A configuration problem, stated in one line for the user."""
