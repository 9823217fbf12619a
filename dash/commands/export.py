"""`kdash export LOG [--format jsonl|csv]`: every parsed record of a server log, one per line."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

from dash.core.log.parse import Record
from dash.sources.logread import Scan

CSV_COLUMNS = ("kind", "line", "ts", "rank", "engine", "running_req", "queue_req", "tokens",
               "token_usage", "gen_throughput", "new_seq", "new_token", "cached_token",
               "input_throughput", "event", "message", "text")


def _csv_row(rec: Record) -> list[Any]:
    row: list[Any] = [rec.get(c) for c in CSV_COLUMNS]
    extra = {k: v for k, v in rec.items() if k not in CSV_COLUMNS}
    row.append(json.dumps(extra, separators=(",", ":")) if extra else "")
    return row


def run_export(path: Path, fmt: str) -> int:
    """`kdash export LOG [--format jsonl|csv]`: every record, one per line.

    A log that cannot be read raises LogError (a usage error: one line from the CLI, exit 2)."""
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow([*CSV_COLUMNS, "extra"])
        for rec in Scan(path):
            if rec["kind"] != "unparsed":  # counted by `summary`, not a record of the schema
                writer.writerow(_csv_row(rec))
    else:
        write = sys.stdout.write
        for rec in Scan(path):
            if rec["kind"] != "unparsed":
                write(json.dumps(rec, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    return 0


