"""The sample view (`o`): the selected partition's last sample full-screen, shown literally.

Pretty-printed by `dash.core.samples.pretty` (long strings folded, every character a terminal
could act on written as an escape), drawn by a `Log`, which never reads markup and only renders
the rows on screen, so a 1 MB string unfolded still scrolls. `n`/`p` step through the last few
samples as they were when the view opened; `f` folds and unfolds; `escape`, `q` or `o` close.
"""

from __future__ import annotations

from rich.cells import cell_len, chop_cells
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Log, Static

from dash.core.samples.model import RawSample
from dash.core.samples.pretty import pretty_lines
from dash.ui import fmt

KEYS = "n newer  p older  f fold/unfold  up/down pgup/pgdn home/end scroll  esc close"


def wrap(lines: list[str], width: int) -> list[str]:
    """Lines cut to `width` cells; a cut line goes on under its own indentation."""
    out: list[str] = []
    width = max(8, width)
    for line in lines:
        if cell_len(line) <= width:
            out.append(line)
            continue
        body = line.lstrip(" ")
        pad = " " * min(len(line) - len(body), width // 2)
        first, *rest = chop_cells(body, width - len(pad))
        out.append(pad + first)
        out += [pad + piece for piece in chop_cells("".join(rest), width - len(pad))] if rest else []
    return out


class SampleScreen(Screen[None]):
    """One partition's last samples, newest first shown."""

    BINDINGS = [
        Binding("escape,q,o", "close", "close"),
        Binding("n", "step(1)", "newer"),
        Binding("p", "step(-1)", "older"),
        Binding("f", "fold", "fold/unfold"),
    ]

    def __init__(self, partition: str, samples: tuple[RawSample, ...]) -> None:
        super().__init__()
        self.partition = partition
        self.samples = samples
        self.index = len(samples) - 1
        self.fold = True
        self._shown: tuple[int, bool, int] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="sample-title")
        yield Log(id="sample-body", highlight=False, auto_scroll=False)
        yield Static(KEYS, id="sample-keys")

    def on_mount(self) -> None:
        self.query_one("#sample-body", Log).focus()
        self.show_sample()

    def on_resize(self) -> None:
        self.show_sample()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_step(self, step: int) -> None:
        self.index = max(0, min(len(self.samples) - 1, self.index + step))
        self.show_sample()

    def action_fold(self) -> None:
        self.fold = not self.fold
        self.show_sample()

    def show_sample(self) -> None:
        """Draw the current sample (again only when it, the folding or the width changed)."""
        body = self.query_one("#sample-body", Log)
        width = body.size.width - 1 or self.app.size.width - 1
        key = (self.index, self.fold, width)
        if key == self._shown or not self.samples:
            return
        self._shown = key
        raw = self.samples[self.index]
        lines, long_strings = pretty_lines(raw.text, self.fold)
        self._title(raw, long_strings if self.fold else 0)
        body.clear()
        body.write_lines(wrap(lines, width))
        body.scroll_home(animate=False)

    def _title(self, raw: RawSample, folded: int) -> None:
        n = len(self.samples)
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(f" {fmt.clean(self.partition, 60)}", "bold")
        # the samples are those of the moment the view opened: newer ones come with `o` again
        newest = " (newest when opened)" if self.index == n - 1 else ""
        t.append(f"  sample {self.index + 1} of the last {n}{newest}")
        where = f"line {raw.line:,}" if raw.line is not None else f"byte {raw.offset:,}"
        t.append(f"  {where}  {len(raw.text):,} chars", "dim")
        if folded:
            t.append(f"  {folded} long string(s) folded (f)", "dim")
        self.query_one("#sample-title", Static).update(t)
