"""`kdash export LOG [--format jsonl|csv]`: every parsed record of a server log, one per line."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

from dash.core.log.grammar import GRAMMAR
from dash.core.log.parse import Record
from dash.core.log.syntax import Grammar
from dash.core.views.records_json import ShapeWriter, text
from dash.sources.logread import LogCut, Scan, cut_message, fold

CSV_COLUMNS = ("kind", "line", "ts", "rank", "engine", "running_req", "queue_req", "tokens",
               "token_usage", "gen_throughput", "new_seq", "new_token", "cached_token",
               "input_throughput", "event", "message", "text")


def _csv_row(rec: Record) -> list[Any]:
    row: list[Any] = [rec.get(c) for c in CSV_COLUMNS]
    extra = {k: v for k, v in rec.items() if k not in CSV_COLUMNS}
    row.append(json.dumps(extra, separators=(",", ":")) if extra else "")
    return row


class JsonlJob:
    """A piece of the log as its JSON lines (`records_json`), a text per block, numbered as in
    the file: events and every stats family's kind the grammar names (`unparsed` lines are
    for `summary`)."""

    def __init__(self, grammar: Grammar = GRAMMAR) -> None:
        self.kinds = ("event", *dict.fromkeys(f.kind for f in grammar.families))

    keep = None
    numbered = True

    def piece(self, scan: Scan) -> list[bytes]:
        writers: dict[bytes, ShapeWriter] = {}
        stamps = scan.reader.stamps
        return [text(batch, stamps, writers, self.kinds) for batch in scan.batches()]


def run_export(path: Path, fmt: str, grammar: Grammar = GRAMMAR) -> int:
    """`kdash export LOG [--format jsonl|csv]`: every record, one per line; `unparsed` lines
    are counted by `summary`, not records of the schema.

    A log that cannot be read raises LogError (a usage error: one line from the CLI, exit 2)."""
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow([*CSV_COLUMNS, "extra"])
        scan = Scan(path, reader=None if grammar is GRAMMAR else _reader(grammar))
        for rec in scan:
            if rec["kind"] != "unparsed":
                writer.writerow(_csv_row(rec))
        sys.stdout.flush()
        return _broke_off(cut_message(path, scan.cut, scan.lines) if scan.cut else None)
    sys.stdout.flush()
    out = sys.stdout.buffer

    def each(_before: int, texts: list[bytes]) -> None:
        try:
            out.writelines(texts)
        except BrokenPipeError:  # an OSError, which `fold` takes for the log failing to read
            raise _ReaderGone from None

    try:
        fold(path, JsonlJob(grammar), each, grammar)
    except LogCut as exc:  # a .gz that breaks off: the records before it are written
        out.flush()
        return _broke_off(str(exc))
    except _ReaderGone:  # `kdash export LOG | head`: stop quietly, as the CLI does for csv
        raise BrokenPipeError from None
    out.flush()
    return 0


class _ReaderGone(Exception):
    """The reader of the JSON lines went away (a closed pipe) while the log was being read."""


def _broke_off(message: str | None) -> int:
    """Exit 1 with the reason on stderr where a `.gz` broke off (as `zcat` does), else 0."""
    if message is None:
        return 0
    print(f"kdash: {message}", file=sys.stderr)
    return 1


def _reader(grammar: Grammar) -> Any:
    from dash.core.log.bulk import BlockReader
    from dash.core.log.parser import LineParser

    return BlockReader(LineParser(grammar))


