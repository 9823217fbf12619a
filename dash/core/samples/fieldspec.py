"""The `[outputs]` table of the config: where the fields are when detection cannot find them.

```toml
[outputs]
files = ["prepared/*/responses.jsonl"]   # the same as `outputs = [...]`
text = "result.answer"                    # dotted paths into each record
finish = "meta.stop"
tokens = "meta.n"
reasoning = "thinking"
max_tokens = 10240                        # the client's limit, when no record says it
expect_reasoning = true                   # records must carry reasoning (reasoning_missing)
```

Pure: parsed here, read from the files by `dash.sources.config_files`; an unknown key is a
one-line error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dash.core.errors import ConfigError, did_you_mean
from dash.core.samples.paths import Path, parse_path

PATH_KEYS = ("text", "finish", "tokens", "prompt_tokens", "reasoning", "error")
"""The fields a dotted path can name."""
OTHER_KEYS = ("files", "max_tokens", "expect_reasoning", "samples")


@dataclass(frozen=True, slots=True)
class OutputFields:
    """Configured field paths (None: detect), the known limit, and what is expected."""

    text: Path | None = None
    finish: Path | None = None
    tokens: Path | None = None
    prompt_tokens: Path | None = None
    reasoning: Path | None = None
    error: Path | None = None
    max_tokens: int | None = None
    """The token limit the client asks for, when neither the records nor its command line say."""
    expect_reasoning: bool | None = None
    """True: every record should carry reasoning; None: inferred (earlier records had it)."""
    samples: bool = True
    """False: count lines only, never read the samples' contents."""

    def paths(self) -> tuple[tuple[str, Path], ...]:
        """(field, path) of every configured path."""
        return tuple((k, p) for k in PATH_KEYS if (p := getattr(self, k)) is not None)


def parse_outputs_table(table: Mapping[str, Any], where: str,
                        base: OutputFields | None = None) -> tuple[tuple[str, ...] | None,
                                                                   OutputFields]:
    """(the `files` globs or None, the fields) from an `[outputs]` table over `base`."""
    values: dict[str, Any] = {}
    if base is not None:
        values = {k: getattr(base, k) for k in (*PATH_KEYS, *OTHER_KEYS[1:])}
    files: tuple[str, ...] | None = None
    for key, value in table.items():
        if key in PATH_KEYS:
            values[key] = parse_path(value, f"{where}: outputs.{key}")
        elif key == "files":
            files = _globs(value, where)
        elif key == "max_tokens":
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{where}: outputs.max_tokens must be a whole number > 0, "
                                  f"got {value!r}")
            values[key] = value
        elif key in ("expect_reasoning", "samples"):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: outputs.{key} must be true or false, got {value!r}")
            values[key] = value
        else:
            known = OTHER_KEYS + PATH_KEYS
            raise ConfigError(f"{where}: unknown outputs setting {key!r}"
                              f"{did_you_mean(str(key), known) or ''} (known: {', '.join(known)})")
    return files, OutputFields(**values)


def _globs(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: outputs.files must be a glob or a list of globs, "
                          f"got {value!r}")
    return tuple(value)
