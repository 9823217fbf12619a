"""The checks `promtool check metrics` makes on a scrape, for machines without promtool.

promtool runs promlint (prometheus/client_golang, `testutil/promlint`) over the families of the
text exposition: help text, base units, `_total` only on counters, the names histograms and
summaries reserve, no type in the name, no colons, snake_case, no abbreviated units. promtool
exits 3 when any of these finds a problem. The sample syntax itself is checked by
prometheus_client's parser. Where promtool is installed, `promtool_problems` runs it as well.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

UNITS = {
    "amperes": "amperes", "bytes": "bytes", "celsius": "celsius", "grams": "grams",
    "joules": "joules", "kelvin": "kelvin", "meters": "meters", "metres": "metres",
    "seconds": "seconds", "volts": "volts", "minutes": "seconds", "hours": "seconds",
    "days": "seconds", "weeks": "seconds", "kelvins": "kelvin", "fahrenheit": "celsius",
    "rankine": "celsius", "inches": "meters", "yards": "meters", "miles": "meters",
    "bits": "bytes", "calories": "joules", "pounds": "grams", "ounces": "grams",
}
PREFIXES = ("pico", "nano", "micro", "milli", "centi", "deci", "deca", "hecto", "kilo", "kibi",
            "mega", "mibi", "giga", "gibi", "tera", "tebi", "peta", "pebi")
ABBREVIATIONS = ("s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "pb", "m", "h", "d")
TYPE_WORDS = ("counter", "gauge", "summary", "histogram", "gauge_histogram")
_CAMEL = re.compile(r"[a-z][A-Z]")
_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="')


@dataclass
class Family:
    name: str
    type: str = "untyped"
    help: str | None = None
    labels: set[str] = field(default_factory=set)


def families(text: str) -> dict[str, Family]:
    """The families of an exposition as its `# HELP` / `# TYPE` lines name them, with the label
    names of their samples. Raises ValueError for text the Prometheus parser rejects."""
    list(text_string_to_metric_families(text))  # the sample syntax
    fams: dict[str, Family] = {}
    for line in text.splitlines():
        if line.startswith(("# HELP ", "# TYPE ")):
            _, kind, name, *rest = line.split(" ", 3)
            fam = fams.setdefault(name, Family(name))
            if kind == "TYPE":
                fam.type = rest[0].strip() if rest else "untyped"
            else:
                fam.help = rest[0] if rest else ""
        elif line and not line.startswith("#"):
            m = _SAMPLE.match(line)
            if m is None:
                raise ValueError(f"bad sample line: {line!r}")
            fam = fams.get(m.group(1)) or fams.get(_base(m.group(1))) or \
                fams.setdefault(m.group(1), Family(m.group(1)))
            fam.labels.update(_LABEL.findall(m.group(2) or ""))
    return fams


def _base(sample: str) -> str:
    for suffix in ("_bucket", "_count", "_sum"):
        if sample.endswith(suffix):
            return sample[: -len(suffix)]
    return sample


def _has_word(name: str, word: str) -> bool:
    return f"_{word}_" in name or name.endswith(f"_{word}")


def _units(name: str) -> list[str]:
    for word in name.split("_"):
        unit = word if word in UNITS else next(
            (word[len(p):] for p in PREFIXES if word.startswith(p) and word[len(p):] in UNITS),
            None)
        if unit is not None:
            base = UNITS[unit]
            return [] if word == base else [f'use base unit "{base}" instead of "{word}"']
    return []


def problems(fam: Family) -> list[str]:
    """promlint's findings for one family."""
    out: list[str] = []
    n, t = fam.name, fam.type
    if fam.help is None:
        out.append("no help text")
    out += _units(n)
    if t == "counter" and not n.endswith("_total"):
        out.append('counter metrics should have "_total" suffix')
    elif t not in ("counter", "untyped") and n.endswith("_total"):
        out.append('non-counter metrics should not have "_total" suffix')
    if t != "untyped":
        if t != "histogram" and (n.endswith("_bucket") or "le" in fam.labels):
            out.append("reserved for histograms")
        if t not in ("histogram", "summary") and n.endswith(("_count", "_sum")):
            out.append("reserved for histograms and summaries")
        if t != "summary" and "quantile" in fam.labels:
            out.append('non-summary metrics should not have "quantile" label')
    low = n.lower()
    out += [f"metric name should not include type '{w}'" for w in TYPE_WORDS if _has_word(low, w)]
    if ":" in n:
        out.append("metric names should not contain ':'")
    if _CAMEL.search(n) or any(_CAMEL.search(label) for label in fam.labels):
        out.append("names should be written in 'snake_case' not 'camelCase'")
    if any(_has_word(low, a) for a in ABBREVIATIONS):
        out.append("metric names should not contain abbreviated units")
    return out


def lint(text: str) -> list[str]:
    """Every problem in an exposition, as `name: problem` (empty: promtool would exit 0)."""
    return [f"{f.name}: {p}" for f in families(text).values() for p in problems(f)]


def promtool_problems(text: str) -> tuple[int, str] | None:
    """`promtool check metrics` on the text: (exit code, output); None without promtool."""
    promtool = shutil.which("promtool")
    if promtool is None:
        return None
    out = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                         text=True, timeout=30)
    return out.returncode, out.stdout + out.stderr
