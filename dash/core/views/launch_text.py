"""The launches table laid out in columns of text: which launches fit a width, and the plain
report `kdash launches` prints (the screen draws the same layout with its own styles)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dash.core.launch import Launch
from dash.core.views.launch_advice import advice
from dash.core.views.launch_table import MARK, Row, table

LABEL_W = 20
"""The row labels' column (an indented label of up to 17 characters, and a space)."""
MIN_COL, MAX_COL = 9, 22
SECTIONS = {"args": "arguments", "capacity": "capacity", "achieved": "achieved"}
LEGEND = f"{MARK} changed from the launch before"


def legend(launches: Sequence[Launch]) -> str:
    """The marks' key: `*` only where there is a launch before to differ from, `<` only where
    a start time is a lower bound (the log begins mid-run)."""
    parts = [LEGEND] if len(launches) > 1 else []
    if any(not x.start_seen and x.started_at is not None for x in launches):
        parts.append("< started before the log's first line")
    return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class Layout:
    """The launch columns shown (`first` to `last`, inclusive) and each one's width."""

    first: int
    last: int
    widths: tuple[int, ...]

    @property
    def hidden(self) -> int:
        return self.first


def header(i: int, launches: Sequence[Launch]) -> str:
    """`#3`, and `#4 now` over the newest launch while it runs."""
    now = i == len(launches) - 1 and launches[i].outcome == "running" and not launches[i].earlier
    return f"#{i + 1}" + (" now" if now else "")


def column_widths(rows: Sequence[Row], launches: Sequence[Launch]) -> list[int]:
    """Each launch's column: its longest value and its mark (a log's name is cut to fit)."""
    widths = []
    for i in range(len(launches)):
        longest = max([len(header(i, launches))] + [len(r.cells[i].text) + 1 for r in rows
                                                   if r.label != "log"])
        widths.append(max(MIN_COL, min(MAX_COL, longest + 1)))
    return widths


def layout(rows: Sequence[Row], launches: Sequence[Launch], width: int,
           last: int | None = None) -> Layout:
    """The launches that fit `width` next to the labels, ending at `last` (default: the
    newest), going back as far as they fit; at least one."""
    widths = column_widths(rows, launches)
    end = len(launches) - 1 if last is None else max(0, min(last, len(launches) - 1))
    room, first = width - LABEL_W, end
    room -= widths[end] if widths else 0
    while first > 0 and room >= widths[first - 1]:
        first -= 1
        room -= widths[first]
    return Layout(first, end, tuple(widths))


def cell_text(text: str, changed: bool, width: int) -> str:
    """A cell's text, marked when changed, cut and padded to its column."""
    shown = (MARK if changed else " ") + text
    if len(shown) > width - 1:
        shown = shown[:width - 2] + "…"
    return shown.ljust(width)


def label_text(row: Row) -> str:
    label = f"  {row.label}" if row.section in SECTIONS else row.label
    return label[:LABEL_W - 1].ljust(LABEL_W)


def render(launches: Sequence[Launch], width: int = 100) -> str:
    """The table, a legend and the advice, as plain text (the marker shows what changed)."""
    if not launches:
        return "no server start found\n"
    rows = table(launches)
    lay = layout(rows, launches, width)
    shown = range(lay.first, lay.last + 1)
    out = ["".ljust(LABEL_W) + "".join(
        f" {header(i, launches)}".ljust(lay.widths[i]) for i in shown).rstrip()]
    section = "run"
    for row in rows:
        if row.section != section:
            section = row.section
            out.append(SECTIONS[section])
        out.append((label_text(row) + "".join(
            cell_text(row.cells[i].text, row.cells[i].changed, lay.widths[i])
            for i in shown)).rstrip())
    if lay.hidden:
        out.append(f"(launches 1-{lay.hidden} left out: they do not fit {width} columns; "
                   "--json has them all)")
    if key := legend(launches):
        out.append(key)
    out.append("")
    out.extend(advice(launches))
    return "\n".join(out) + "\n"
