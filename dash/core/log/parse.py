"""kdash's parser: `parse_line`, the `LineParser` of the grammar in `dash.core.log.grammar`.

Readers that need another grammar (a test's extension, a worker process given one explicitly)
build their own `LineParser`; everything else parses with `PARSER`.
"""

from __future__ import annotations

from dash.core.log.grammar import GRAMMAR
from dash.core.log.parser import MAX_LINE_CHARS, MAX_TEXT_CHARS, LineParser, Record

__all__ = ["MAX_LINE_CHARS", "MAX_TEXT_CHARS", "PARSER", "LineParser", "Record", "parse_line"]

PARSER = LineParser(GRAMMAR)
parse_line = PARSER.parse
