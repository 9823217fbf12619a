"""Build `dash/core/_linescan`, the summary's C line scanner, when a C compiler is at hand.

It is optional: without a compiler (or on a platform where this simple build does not work),
the install goes on and `kdash summary` uses the same scan written with `re`, two to three
times slower on a large log and otherwise identical. A failed build prints why and never fails
the install. `CC` picks the compiler; `KDASH_NO_C_BUILD=1` skips it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("dash") / "core" / "_linescan.c"


def _compile(root: Path) -> Path | None:
    """Compile the module next to its source; its path, or None (and why, on stderr)."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    include = sysconfig.get_paths().get("include")
    if os.environ.get("KDASH_NO_C_BUILD"):
        return None
    if sys.platform == "win32" or not suffix or not include:
        print("kdash: not building the C line scanner here; the pure-Python one is used",
              file=sys.stderr)
        return None
    source = root / SOURCE
    target = source.with_name("_linescan" + suffix)
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    flags = ["-O2", "-fPIC", "-shared", "-Wall", f"-I{include}"]
    if sys.platform == "darwin":
        flags += ["-undefined", "dynamic_lookup"]
    cmd = [*cc, *flags, str(source), "-o", str(target)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"kdash: C line scanner not built ({exc}); the pure-Python one is used",
              file=sys.stderr)
        return None
    if done.returncode != 0:
        print(f"kdash: C line scanner not built ({' '.join(cmd)} failed: "
              f"{done.stderr.strip()[-400:]}); the pure-Python one is used", file=sys.stderr)
        return None
    return target


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        built = _compile(Path(self.root))
        if built is None or version == "editable":
            return  # an editable install imports the module from the source tree
        build_data["artifacts"].append(str(built.relative_to(self.root)))
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
