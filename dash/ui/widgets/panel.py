"""A Static whose content is replaced only when it changed, and never triggers a relayout."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class Panel(Static):
    """Text content sized by the stylesheet: an update repaints this widget only.

    `Static.update` relayouts the whole screen by default (its size may depend on its content),
    which at one refresh a second costs more than everything else kdash does.
    """

    _shown: Text | None = None

    def show_text(self, text: Text) -> None:
        """Show `text` unless it is what is already shown."""
        if self._shown is not None and text == self._shown:
            return
        self._shown = text
        self.update(text, layout=False)
