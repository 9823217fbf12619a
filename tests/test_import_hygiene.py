"""The pure core and the I/O sources must never pull in Textual or Rich."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import dash.core
import dash.sources


def _modules(pkg) -> list[str]:
    return [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]


def test_core_and_sources_do_not_import_textual_or_rich() -> None:
    mods = _modules(dash.core) + _modules(dash.sources) + ["dash.config", "dash.cli"]
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"imported: {out.stdout.strip()}"


def test_only_one_module_imports_each_adapter_library() -> None:
    from pathlib import Path

    root = Path(dash.core.__file__).resolve().parent.parent
    owners = {"pynvml": {"sources/nvml.py"}, "watchfiles": {"sources/watch.py"},
              "httpx": {"sources/http.py"}}
    for lib, allowed in owners.items():
        users = {
            str(p.relative_to(root))
            for p in root.rglob("*.py")
            if f"import {lib}" in p.read_text() or f"from {lib}" in p.read_text()
        }
        assert users <= allowed, f"{lib} imported by {sorted(users - allowed)}"
