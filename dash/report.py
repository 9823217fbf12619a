"""`kdash summary LOG` and `kdash export LOG`: headless reads of a whole server log.

Both stream through `Scan`: the file is read in large binary blocks of whole lines, counted with
`bytes.count`. Export parses every line that can be a record (uvicorn access lines, the bulk of
a busy log, are skipped by one compiled pattern at C speed). Summary folds each block into a
`Part` straight from the bytes (`dash.core.fastscan`) and only falls back to record-by-record
parsing for a block the fast path cannot vouch for; on a large plain file the second half is
read by a second process. Memory stays constant on a multi-GB log; `.gz` logs are read through
gzip (one process).
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from dash.core import fastscan
from dash.core.fastscan import scan_block
from dash.core.parse import MAX_LINE_CHARS, Record, parse_line
from dash.core.parse_summary import LogSummary, Part, PartBuilder

CHUNK = 1 << 20  # a block that stays in cache across the few passes over it
PARALLEL_MIN = 64 << 20  # a plain file at least this big is summarised by several processes
SEGMENT = 1 << 30  # bytes read per round by all of them
MAX_PROCESSES = 8  # a summary need not take every core of a box that is serving a model
PIECE = 16 << 20  # what one process takes at a time: small enough that all finish together
MAX_ALERT_LINES = 15  # alerts listed in the text report
_MAX_LINE_BYTES = MAX_LINE_CHARS * 4
# A line start that is neither blank nor a uvicorn access line (`INFO:     127.0.0.1:...`,
# after SGLang's `[ts] ` or vLLM's `(APIServer pid=1) `): parse_line returns None for those.
# `[` and any 19 characters `] ` is the stamp's width, as the fast path reads it (fastscan).
_CANDIDATE = re.compile(
    rb"\n(?!\r?\n|(?:\[[^\]\n]{0,80}\] |\([^)\n]{0,80}\) |\[.{19}\] )?INFO:     \d)"
)


class LogError(Exception):
    """The log cannot be read: printed as one line, exit 2."""


class Scan:
    """Records (or summary parts) of one log in file order; `lines` is the line count once
    iteration ends. `start`/`end` read a byte range of a plain file, `start` at a line start,
    counting its lines from 1."""

    def __init__(self, path: Path, start: int = 0, end: int | None = None) -> None:
        self.path = path
        self.start = start
        self.end = end
        self.lines = 0

    def _open(self) -> IO[bytes]:
        if self.path.is_dir():
            raise LogError(f"{self.path}: is a directory")
        try:
            if self.path.suffix == ".gz":
                return gzip.open(self.path, "rb")
            fh = self.path.open("rb")
        except FileNotFoundError:
            raise LogError(f"{self.path}: no such file") from None
        except OSError as exc:
            raise LogError(f"{self.path}: {exc.strerror or exc}") from None
        fh.seek(self.start)
        return fh

    def _read(self, fh: IO[bytes], view: memoryview) -> int:
        try:
            return fh.readinto(view)  # type: ignore[attr-defined]
        except (OSError, EOFError) as exc:  # a corrupt or truncated .gz
            raise LogError(f"{self.path}: {exc}") from None

    def runs(self) -> Iterator[tuple[bytearray, int]]:
        """(buffer, end) for each run of whole lines: `buffer[0]` is a newline and the lines are
        `buffer[1:end]` (the last line of the file given its missing newline). The buffer is
        reused: use it before the next step. An overlong line is cut to a bounded head.
        `lines` counts what the caller has been given."""
        buf = bytearray(1 + _MAX_LINE_BYTES + CHUNK)
        buf[0] = 10
        view = memoryview(buf)
        with self._open() as fh:
            have = 1  # buf[1:have] is the carried partial line
            left = None if self.end is None else self.end - self.start
            while left is None or left > 0:
                want = CHUNK if left is None else min(CHUNK, left)
                got = self._read(fh, view[have:have + want])
                if not got:
                    break
                if left is not None:
                    left -= got
                have += got
                cut = buf.rfind(b"\n", 1, have) + 1
                if cut == 0:
                    # no newline yet: keep a bounded head of the overlong line
                    have = min(have, 1 + _MAX_LINE_BYTES)
                    continue
                yield buf, cut
                rest = min(have - cut, _MAX_LINE_BYTES)
                buf[1:1 + rest] = buf[cut:cut + rest]
                have = 1 + rest
            if have > 1:
                buf[have] = 10
                yield buf, have + 1

    def blocks(self) -> Iterator[bytes]:
        """Runs of whole lines, as `runs` gives them, each its own bytes."""
        for buf, end in self.runs():
            yield bytes(buf[1:end])

    def __iter__(self) -> Iterator[Record]:
        for block in self.blocks():
            yield from self._block(block)

    def parts(self) -> Iterator[Part]:
        """One summary part per block: the fast path where it vouches, else record by record."""
        for buf, end in self.runs():
            part = scan_block(buf, end, self.lines + 1)
            if part is None:
                base = self.lines
                part = PartBuilder().feed_all(self._block(bytes(buf[1:end])))
                part.lines = self.lines - base
            else:
                self.lines += part.lines
            yield part

    def _block(self, block: bytes) -> Iterator[Record]:
        """Records of a run of complete lines; advances the line count."""
        base = self.lines  # line number of the line before the block
        scan = b"\n" + block
        pos, lineno = 0, base
        for m in _CANDIDATE.finditer(scan, 0, len(scan) - 1):
            start = m.end()
            lineno += scan.count(b"\n", pos, start)
            end = scan.find(b"\n", start)
            pos = start
            text = scan[start:min(end, start + _MAX_LINE_BYTES)].decode("utf-8", "replace")
            rec = parse_line(text, lineno)
            if rec is not None:
                yield rec
        self.lines = base + block.count(b"\n")


class _Claims:
    """Pieces of a segment handed out from both ends: this process reads from the front (it
    merges as it goes), the forked ones from the back, until they meet; whoever is quicker
    reads more, so a busy core holds nobody up."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared  # multiprocessing.Array('q', 2): next front piece, end of the back

    def reset(self, pieces: int) -> None:
        with self.shared.get_lock():
            self.shared[0], self.shared[1] = 0, pieces

    def take(self, front: bool) -> int | None:
        with self.shared.get_lock():
            lo, hi = self.shared[0], self.shared[1]
            if lo >= hi:
                return None
            if front:
                self.shared[0] = lo + 1
                return lo
            self.shared[1] = hi - 1
            return hi - 1


_worker_claims: _Claims | None = None  # a forked process's view of the claims (pool initializer)


def _init_worker(claims: _Claims) -> None:
    global _worker_claims
    _worker_claims = claims


def _back_piece(path: Path, cuts: list[int]) -> tuple[int, list[Part]] | None:
    """In a forked process: the next piece from the back and its parts (lines counted from 1),
    or None when the pieces have run out. One piece a task, so that each is handed back as
    soon as it is read, not all at the end."""
    assert _worker_claims is not None
    i = _worker_claims.take(front=False)
    return None if i is None else (i, list(Scan(path, cuts[i], cuts[i + 1]).parts()))


def _line_start_after(path: Path, pos: int) -> int:
    """The offset of the first line start at or after `pos`."""
    with path.open("rb") as fh:
        fh.seek(max(0, pos - 1))
        while True:
            piece = fh.read(1 << 16)
            if not piece:
                return fh.tell()
            nl = piece.find(b"\n")
            if nl >= 0:
                return fh.tell() - len(piece) + nl + 1


def processes() -> int:
    """How many processes a large summary uses: one per core, at most `MAX_PROCESSES`;
    `KDASH_PROCESSES=N` asks for N (1 keeps it to one)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        wanted = int(os.environ.get("KDASH_PROCESSES", str(cores or 1)))
    except ValueError:
        wanted = cores or 1
    return max(1, min(wanted, MAX_PROCESSES))


def _parts(path: Path) -> Iterator[Part]:
    """Every part of the log in file order. A large plain file is read in segments, each cut
    into pieces at line starts and read by this process and forked ones at once (`_Claims`);
    segments bound what the forked processes hand back."""
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        size = 0
    n = processes()
    if path.suffix == ".gz" or size < PARALLEL_MIN or n < 2:
        yield from Scan(path).parts()
        return
    import multiprocessing  # only here: a small log starts quicker without it

    ctx = multiprocessing.get_context("fork")
    claims = _Claims(ctx.Array("q", 2))
    done, start = 0, 0  # lines and bytes before the segment
    with ctx.Pool(n - 1, initializer=_init_worker, initargs=(claims,)) as pool:
        while start < size:
            end = size if size - start < SEGMENT * 3 // 2 else _line_start_after(path, start + SEGMENT)
            count = max(n, -(-(end - start) // PIECE))
            cuts = [start, *(min(end, _line_start_after(path, start + (end - start) * k // count))
                             for k in range(1, count)), end]
            claims.reset(count)
            later = [pool.apply_async(_back_piece, (path, cuts)) for _ in range(count)]
            first = 0  # pieces read here: those before `first`
            while (i := claims.take(front=True)) is not None:
                scan = Scan(path, cuts[i], cuts[i + 1])
                for part in scan.parts():
                    part.shift(done)
                    yield part
                done += scan.lines
                first = i + 1
            back = dict(filter(None, (result.get() for result in later)))
            for i in range(first, count):
                offset = done  # each piece's lines were counted from 1
                for part in back[i]:
                    part.shift(offset)
                    done += part.lines
                    yield part
            start = end


def _ref_time(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def summarize(path: Path) -> dict[str, Any]:
    """The summary document of one log (raises LogError). `KDASH_PURE_PYTHON=1` does without
    the C line scanner (to compare, or to rule it out)."""
    if os.environ.get("KDASH_PURE_PYTHON", "") not in ("", "0"):
        fastscan.scanner = None
    summary = LogSummary(ref=_ref_time(path))
    try:
        for part in _parts(path):
            summary.merge(part)
    except OSError as exc:  # the file went away between the processes' reads
        raise LogError(f"{path}: {exc.strerror or exc}") from None
    return document(path, summary)


def document(path: Path, summary: LogSummary) -> dict[str, Any]:
    """The summary's document, alerts replayed on the log's own clock."""
    doc = summary.to_dict()
    doc["path"] = str(path)
    doc["throughput_series"] = summary.throughput.series()
    # Imported here, not at the top: a large log's reading processes fork before these load.
    from dash.config import Config
    from dash.core.alerts import AlertConfig, alert_to_json
    from dash.core.run import replay_alerts

    # A long log is replayed thinned (summary_alerts.AlertFeed): gaps between the decode
    # records kept are no sign of a silent server until they exceed that thinning.
    silent = max(AlertConfig().silent_after_s, summary.alerts.spacing_s() + 60.0)
    cfg = Config(alerts={"silent_after_s": silent})
    doc["alerts"] = [alert_to_json(a) for a in replay_alerts(summary.alerts.records(), cfg)]
    return doc


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:,.2f}" if isinstance(v, float) else str(v)


def render_text(doc: dict[str, Any], width: int = 80) -> str:
    """The summary as a plain-text report for a terminal."""
    rec = doc["records"]
    gen = doc["gen_throughput"]
    peak = gen["peak"] or {}
    pre = doc["prefill"]
    out = [
        f"{doc['path']}  ({doc['engine']}, {doc['lines']:,} lines)",
        f"  time        {_fmt(doc['first_ts'])}  ->  {_fmt(doc['last_ts'])}",
        f"  records     decode {rec['decode']:,}  prefill {rec['prefill']:,}  "
        f"event {rec['event']:,}  unparsed {rec['unparsed']:,}",
        f"  gen tok/s   peak {_fmt(peak.get('gen_throughput'))} at {_fmt(peak.get('ts'))} "
        f"(line {_fmt(peak.get('line'))}), mean {_fmt(gen['mean'])} over {gen['samples']:,} lines",
        f"  prefix hit  {_fmt(None if pre['cache_hit_ratio'] is None else pre['cache_hit_ratio'] * 100)}%"
        f" of {pre['cached_tokens'] + pre['new_tokens']:,} prefill tokens",
    ]
    last = doc["last_decode"]
    if last:
        out.append(
            f"  last decode line {last['line']} at {_fmt(last['ts'])}: running {_fmt(last['running_req'])}, "
            f"queue {_fmt(last['queue_req'])}, token usage {_fmt(last['token_usage'])}, "
            f"gen {_fmt(last['gen_throughput'])} tok/s"
        )
    series = doc["throughput_series"]
    if len(series) >= 2:
        from dash.core.textplot import render_chart  # plotext: only for the text report

        t0 = series[0][0]
        xs = [x - t0 for x, _ in series]
        out.append(render_chart(xs, [y for _, y in series], min(width, 100), 12,
                                "gen throughput (tok/s) over the log (x: seconds from first decode)"))
    if doc["event_counts"]:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(doc["event_counts"].items()))
        out.append(f"  events      {counts}")
        for ev in doc["events"][-15:]:
            out.append(f"    line {ev['line']:>9}  {_fmt(ev['ts']):<23} {ev['event']:<12} "
                       f"{ev['message'][:max(20, width - 60)]}")
    for text in doc["unparsed_samples"]:
        out.append(f"  unparsed: {text[:width - 12]}")
    out.extend(_alert_lines(doc["alerts"], width))
    return "\n".join(out) + "\n"


def _alert_lines(alerts: list[dict[str, Any]], width: int) -> list[str]:
    """The alerts the log would have raised, replayed on its own clock."""
    if not alerts:
        return ["  alerts      none"]
    out = [f"  alerts      {len(alerts)} fired over the log" +
           (f" (the last {MAX_ALERT_LINES} below)" if len(alerts) > MAX_ALERT_LINES else "")]
    for a in alerts[-MAX_ALERT_LINES:]:
        out.append(f"    {a['severity'].upper():<5} {a['id']:<20} {a['message'][:max(20, width - 32)]}")
        if a.get("line"):
            out.append(f"          {str(a['line'])[:width - 12]}")
    return out


def _fail(message: str) -> int:
    print(f"kdash: {message}", file=sys.stderr)
    return 2


def run_summary(path: Path, as_json: bool) -> int:
    """`kdash summary LOG [--json]`."""
    try:
        doc = summarize(path)
    except LogError as exc:
        return _fail(str(exc))
    if as_json:
        doc.pop("throughput_series")
        _write(json.dumps(doc, indent=1) + "\n")
    else:
        width = _terminal_width()
        _write(render_text(doc, width))
    return 0


CSV_COLUMNS = ("kind", "line", "ts", "rank", "engine", "running_req", "queue_req", "tokens",
               "token_usage", "gen_throughput", "new_seq", "new_token", "cached_token",
               "input_throughput", "event", "message", "text")


def _csv_row(rec: Record) -> list[Any]:
    row: list[Any] = [rec.get(c) for c in CSV_COLUMNS]
    extra = {k: v for k, v in rec.items() if k not in CSV_COLUMNS}
    row.append(json.dumps(extra, separators=(",", ":")) if extra else "")
    return row


def run_export(path: Path, fmt: str) -> int:
    """`kdash export LOG [--format jsonl|csv]`: every record, one per line."""
    try:
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
    except LogError as exc:
        return _fail(str(exc))
    return 0


def _write(text: str) -> None:
    sys.stdout.write(text)  # a closed pipe (`| head`) is handled once, in dash.cli.main
    sys.stdout.flush()


def _terminal_width() -> int:
    try:
        return max(60, min(os.get_terminal_size(sys.stdout.fileno()).columns, 140))
    except (OSError, ValueError):
        return 100
