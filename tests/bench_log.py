"""`bench/parse.py` as a module: the tests write its bench log's shapes (a small one) to check
the readers on the very lines the benchmark measures."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def bench_parse() -> Any:
    """The benchmark's module, loaded from its file (bench/ is no package)."""
    spec = importlib.util.spec_from_file_location("bench_parse", REPO / "bench" / "parse.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
