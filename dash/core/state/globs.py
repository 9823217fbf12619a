"""Partition names from output globs, and the way back: where a named partition's output goes.

A partition is named by the part of its output path that the glob's wildcards matched
(`prepared/*/responses.jsonl` names `prepared/B2/responses.jsonl` "B2"). Prompt files
(`--inputs`) are named the same way, which is how a total finds its partition. Pure: no I/O.
"""

from __future__ import annotations

import glob
import os
from fnmatch import fnmatchcase
from pathlib import PurePath

STEM_EXTS = (".jsonl", ".json", ".ndjson", ".txt", ".csv", ".gz")
"""Extensions dropped from a file name to name its partition."""


def glob_error(pattern: str) -> str | None:
    """Why `pattern` is not a usable glob, or None."""
    if not pattern.strip():
        return "empty glob"
    if "\x00" in pattern:
        return f"glob contains a NUL byte: {pattern!r}"
    if pattern.endswith(("/", os.sep)):
        return f"glob names a directory, not files: {pattern!r}"
    depth = 0
    for ch in pattern:
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
    if depth:
        return f"unbalanced '[' in glob: {pattern!r}"
    return None


def partition_name(pattern: str, path: str) -> str:
    """The part of `path` that the glob's wildcards matched: what tells partitions apart.

    `prepared/*/responses.jsonl` names `prepared/B2/responses.jsonl` "B2"; `out/*.jsonl` names
    `out/B2.jsonl` "B2" (the stem); a literal path is named by its stem.
    """
    pparts = PurePath(pattern).parts
    parts = PurePath(path).parts
    if len(pparts) == len(parts) and "**" not in pattern:
        picked = [
            stem(p) if i == len(parts) - 1 else p
            for i, (pp, p) in enumerate(zip(pparts, parts, strict=True))
            if glob.has_magic(pp)
        ]
        if picked:
            return "/".join(picked)
        return stem(parts[-1])
    literal = 0
    while literal < min(len(pparts), len(parts)) - 1 and not glob.has_magic(pparts[literal]):
        literal += 1
    rest = list(parts[literal:])
    rest[-1] = stem(rest[-1])
    return "/".join(rest)


def stem(name: str) -> str:
    """A file name without its data extension (`B2.jsonl` -> `B2`)."""
    for ext in STEM_EXTS:
        if name.endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return PurePath(name).stem or name


def expected_output(patterns: tuple[str, ...], name: str) -> str:
    """Where partition `name`'s output file will be, or "" when the globs cannot tell.

    Only a glob with a single `*` (and no other wildcard) can be inverted, and only when exactly
    one path both matches it and is named `name`: `out/*.jsonl` gives `out/B3.jsonl`, while
    `out/*` could be `out/B3.jsonl` or `out/B3.json` and gives nothing.
    """
    for pattern in patterns:
        found = _invert(pattern, name)
        if found:
            return found
    return ""


def _invert(pattern: str, name: str) -> str:
    parts = PurePath(pattern).parts
    magic = [i for i, p in enumerate(parts) if glob.has_magic(p)]
    if len(magic) != 1 or "/" in name or not name:
        return ""
    i = magic[0]
    comp = parts[i]
    if comp.count("*") != 1 or glob.has_magic(comp.replace("*", "")):
        return ""
    last = i == len(parts) - 1
    tries = [name + ext for ext in STEM_EXTS] + [name] if last else [name]
    found = set()
    for cand in tries:
        path = str(PurePath(*parts[:i], cand, *parts[i + 1:]))
        if fnmatchcase(cand, comp) and partition_name(pattern, path) == name:
            found.add(path)
    return found.pop() if len(found) == 1 else ""
