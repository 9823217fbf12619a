"""`kdash summary LOG [--json]`: a headless report of a whole server log, with its alerts."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import textwrap
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dash.core.launch import span
from dash.core.log.grammar import GRAMMAR
from dash.core.log.syntax import Grammar
from dash.core.views.summary import LogSummary, Part
from dash.core.views.summary_fold import KEEP, part_of
from dash.sources.logread import LogCut, Scan, fold, ref_time

MAX_ALERT_LINES = 15  # alerts listed in the text report
_REPORT_MODULES = ("dash.core.alerts.model", "dash.core.config", "dash.core.state.run",
                   "dash.core.state.launches", "dash.core.views.launch_advice")


class SummaryJob:
    """A piece of the log as summary parts, one per block (in whichever process)."""

    keep = KEEP
    numbered = False  # a part's line numbers are shifted as it is merged

    def piece(self, scan: Scan) -> list[Part]:
        stamps = scan.reader.stamps
        return [part_of(batch, stamps) for batch in scan.batches()]


def summarize(path: Path, grammar: Grammar = GRAMMAR,
              alerts: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The summary document of one log (raises LogError); `alerts`: the configured thresholds
    (`[alerts]`), as the dashboard would have judged the log with them."""
    summary = LogSummary(ref=ref_time(path))
    loaded = False

    def each(before: int, parts: list[Part]) -> None:
        nonlocal loaded
        if not loaded:  # while the reading processes read on, not once they are done
            loaded = True
            load_report()
        for part in parts:
            part.shift(before)
            summary.merge(part)

    cut = None
    try:
        fold(path, SummaryJob(), each, grammar)
    except LogCut as exc:  # a .gz that breaks off: the lines before it are summarised
        cut = str(exc)
    return document(path, summary, alerts, cut)


def load_report() -> None:
    """Import what the document needs after the reading (the alert replay, the launches): a
    large log's reading processes start before these load, and this process, which waits on
    them, loads them while they read."""
    for name in _REPORT_MODULES:
        importlib.import_module(name)


def document(path: Path, summary: LogSummary, alerts: Mapping[str, Any] | None = None,
             read_error: str | None = None) -> dict[str, Any]:
    """The summary's document, alerts replayed on the log's own clock; `read_error`: where a
    `.gz` broke off (None: read to its end)."""
    doc = summary.to_dict()
    doc["path"] = str(path)
    doc["read_error"] = read_error
    doc["throughput_series"] = summary.throughput.series()
    # Imported here, not at the top: a large log's reading processes start before these load.
    from dash.core.alerts.model import alert_to_json
    from dash.core.config import AlertConfig, Config
    from dash.core.state.run import replay_alerts
    from dash.core.state.server_log import is_not_a_log, prefixed
    from dash.core.views.launch_advice import launches_json

    logged = (doc["first_ts"] is not None) + sum(
        n for k, n in doc["records"].items() if k not in ("event", "unparsed")) + sum(
        map(prefixed, doc["events"]))
    if is_not_a_log(doc["lines"], doc["records"]["event"], logged):
        # as the dashboard judges it (ServerLogTracker.not_a_log): words in other text
        doc["not_a_log"] = (f"none of its {doc['lines']:,} lines has a timestamp or a stats "
                            "line: is this the server's log? (no alerts or launches read)")
        doc["alerts"], doc["launches"] = [], []
        return doc
    doc["not_a_log"] = None
    # A long log is replayed thinned (dash.core.views.summary_feed.AlertFeed): gaps between the decode
    # records kept are no sign of a silent server until they exceed that thinning.
    configured = AlertConfig.from_mapping(alerts or {})
    silent = max(configured.silent_after_s, summary.alerts.spacing_s() + 60.0)
    cfg = Config(alerts={**(alerts or {}), "silent_after_s": silent})
    replayed = summary.alerts.records()
    ended: list[float | None] = []
    fired = replay_alerts(replayed, cfg, ended=ended)
    # `until`: the log time the alert cleared at (None: still active where the log ends). A
    # log without stamps has no times to give: its replay's clock is line order from 0 (1970,
    # `since 00:00:00`); its evidence names the line.
    timed = doc["first_ts"] is not None
    doc["alerts"] = [{**alert_to_json(a), "until": t} if timed else
                     {**alert_to_json(a), "since": None, "until": None}
                     for a, t in zip(fired, ended, strict=True)]
    # The replay's stream is thinned (decode lines one per 10 s, no prefill lines): a launch's
    # throughput, line counts and prefill figures from it would be a sample's, 50x off on a
    # short launch; `kdash launches LOG` reads every line for them.
    doc["launches"] = launches_json(replay_launches(path, replayed, summary), figures=False)
    return doc


def replay_launches(path: Path, replayed: list[dict[str, Any]],
                    summary: LogSummary) -> tuple[Any, ...]:
    """The log's launches from the alert replay's stream (every event, decode lines thinned)
    and the log's first and last decode or prefill line (a log of prefill lines only has no
    decode line to replay, and still a launch): its windows are widened to hold as many of them
    as the plateau rule's window holds lines."""
    from dash.core.state.launches import LaunchTracker

    seen = {rec["line"] for rec in replayed}
    ends = [rec for rec in (summary.first_stats, summary.last_stats)
            if rec is not None and rec["line"] not in seen]
    if ends:
        replayed = sorted([*replayed, *{rec["line"]: rec for rec in ends}.values()],
                          key=lambda rec: rec["line"])
    tracker = LaunchTracker(None, window_s=max(120.0, 5 * summary.alerts.spacing_s()))
    tracker.feed(replayed, None, ref=summary.ref)
    tracker.finish()
    return tracker.launches()


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:,.2f}" if isinstance(v, float) else str(v)


def render_text(doc: dict[str, Any], width: int = 80) -> str:
    """The summary as a plain-text report for a terminal."""
    rec = doc["records"]
    gen = doc["gen_throughput"]
    peak = gen["peak"] or {}
    out = [
        f"{doc['path']}  ({doc['engine']}, {doc['lines']:,} lines)",
        *([f"  not a log   {doc['not_a_log']}"] if doc.get("not_a_log") else []),
        f"  time        {_fmt(doc['first_ts'])}  ->  {_fmt(doc['last_ts'])}",
        f"  records     decode {rec['decode']:,}  prefill {rec['prefill']:,}  "
        f"event {rec['event']:,}  unparsed {rec['unparsed']:,}"
        + (f"  incomplete {doc['incomplete']:,}" if doc["incomplete"] else "")
        + "".join(f"  {k} {n:,}" for k, n in rec.items()
                  if k not in ("decode", "prefill", "event", "unparsed")),
        f"  gen tok/s   peak {_fmt(peak.get('gen_throughput'))} at {_fmt(peak.get('ts'))} "
        f"(line {_fmt(peak.get('line'))}), mean {_fmt(gen['mean'])} over {gen['samples']:,} lines"
        + (f"; {len(doc['ranks'])} ranks summed ({', '.join(doc['ranks'][:8])}"
           f"{', ...' if len(doc['ranks']) > 8 else ''})" if doc.get("ranks") else "")
        + (f", the mean without the first {gen['ramp_in']:,} (not every rank printed yet)"
           if gen.get("ramp_in") else ""),
        _prefix_hit(doc.get("prefix_hit")),
    ]
    spec = doc["spec"]
    if spec:
        out.append(f"  spec decode {_accept(spec)}")
    if doc.get("perf"):
        out.append(f"  est. perf   {_perf(doc['perf'])}")
    last = doc["last_decode"]
    if last:
        out.append(
            f"  last decode line {last['line']} at {_fmt(last['ts'])}: running {_fmt(last['running_req'])}, "
            f"queue {_fmt(last['queue_req'])}, token usage {_fmt(last['token_usage'])}, "
            f"gen {_fmt(last['gen_throughput'])} tok/s"
        )
    series = doc["throughput_series"]
    if len(series) >= 2:
        from dash.commands.textchart import render_chart  # plotext: only for the text report
        from dash.core.config import AlertConfig

        # Decode lines further apart than the silence alert's default are a silence: the chart
        # leaves it blank rather than joining its two ends.
        silence = AlertConfig().silent_after_s

        t0 = series[0][0]
        unit, scale = _time_unit(series[-1][0] - t0)
        xs = [(x - t0) / scale for x, _ in series]
        out.append(render_chart(xs, [y for _, y in series], min(width, 100), 12,
                                f"gen throughput (tok/s) over the log (x: {unit} from first decode)",
                                gap=silence / scale))
    if doc["event_counts"]:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(doc["event_counts"].items()))
        out.append(f"  events      {counts}")
        for ev in doc["events"][-15:]:
            copies = f"(+{ev['rank_copies']} ranks) " if ev.get("rank_copies") else ""
            out.append(f"    line {ev['line']:>9}  {_fmt(ev['ts']):<23} {ev['event']:<12} {copies}"
                       f"{_cut(str(ev['message']), max(20, width - 60 - len(copies)))}")
    for text in doc["unparsed_samples"]:
        out.append(f"  unparsed: {_cut(text, width - 12)}")
    for sample in doc["incomplete_samples"]:
        why = "; ".join(sample["incomplete"] or ())
        out.append(f"  incomplete ({why}): {str(sample['text'])[:max(20, width - 18 - len(why))]}")
    out.extend(_launch_lines(doc["launches"], width))
    out.extend(_alert_lines(doc["alerts"], width))
    return "\n".join(out) + "\n"


def _launch_lines(launches: list[dict[str, Any]], width: int) -> list[str]:
    """One line per server start; `kdash launches LOG` shows them side by side."""
    if len(launches) < 2:
        return [f"  launches    {len(launches)}"] if not launches else []
    out = [f"  launches    {len(launches)} (kdash launches LOG: side by side, with throughput)"]
    for doc in launches:
        out.append(f"    #{doc['number']:<3} {_fmt(doc['start_ts']):<24} {doc['outcome_text']}, "
                   f"ran {span(doc['duration_s'])}")
        out.append(f"         {doc['advice'].split(': ', 1)[-1][:max(20, width - 9)]}")
    return out


def _mean_last(label: str, fig: dict[str, Any] | None, fmt: str, lines: bool) -> list[str]:
    """`label mean M, last L[ over N lines]` of a figure the summary kept, or nothing."""
    if not fig:
        return []
    over = f" over {fig['samples']:,} lines" if lines else ""
    return [f"{label} mean {fig['mean']:{fmt}}, last {fig['last']:{fmt}}{over}"]


def _accept(spec: dict[str, Any]) -> str:
    """Speculative decoding's acceptance: what a drafter's quality looks like from the server."""
    return "; ".join(_mean_last("accept len", spec.get("accept_len"), ".2f", True)
                     + _mean_last("accept rate", spec.get("accept_rate"), ".2f", False))


def _perf(perf: dict[str, Any]) -> str:
    """What the server estimated of its decoding per GPU, and its forward occupancy."""
    return "; ".join(_mean_last("TFLOP/s per GPU", perf.get("tflops_per_gpu"), ",.1f", True)
                     + _mean_last("fwd occupancy", perf.get("fwd_occupancy"), ".0%", False))


def _alert_lines(alerts: list[dict[str, Any]], width: int) -> list[str]:
    """The alerts the log would have raised, replayed on its own clock."""
    if not alerts:
        return ["  alerts      none"]
    out = [f"  alerts      {len(alerts)} fired over the log" +
           (f" (the last {MAX_ALERT_LINES} below)" if len(alerts) > MAX_ALERT_LINES else "")]
    dated = _spans_days(alerts)
    for a in alerts[-MAX_ALERT_LINES:]:
        # A report is read in full: the message wraps under itself rather than being cut.
        head = f"    {a['severity'].upper():<5} {a['id']:<20} "
        when = f" ({_when(a, dated)})" if a.get("since") is not None else ""
        out.extend(textwrap.wrap(f"{a['message']}{when}", max(40, width),
                                 initial_indent=head, subsequent_indent=" " * len(head),
                                 break_on_hyphens=False)
                   or [head])
        if a.get("line"):
            out.append(f"          {_cut(str(a['line']), width - 10)}")
    return out


def _at(t: float, dated: bool) -> str:
    """A log time as the log prints it (its stamps are read as UTC), dated where the alerts
    span more than one day."""
    moment = datetime.fromtimestamp(t, timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S" if dated else "%H:%M:%S")


def _spans_days(alerts: list[dict[str, Any]]) -> bool:
    times = [t for a in alerts for t in (a.get("since"), a.get("until")) if t is not None]
    return len({datetime.fromtimestamp(t, timezone.utc).date() for t in times}) > 1


def _when(alert: dict[str, Any], dated: bool) -> str:
    """`10:26:22 -> 07:18:14`, or `since 10:26:22, to the end of the log`: whether the
    problem was over before the log ended is what a report after the run is read for."""
    since, until = alert["since"], alert.get("until")
    start = _at(since, dated)
    if until is None:
        return f"since {start}, to the end of the log"
    return f"{start} -> {_at(until, dated)}"


def run_summary(path: Path, as_json: bool, alerts: Mapping[str, Any] | None = None) -> int:
    """`kdash summary LOG [--json] [--config FILE]`."""
    doc = summarize(path, alerts=alerts)  # a LogError is a usage error: one line, exit 2
    if as_json:
        doc.pop("throughput_series")
        _write(json.dumps(doc, indent=1) + "\n")
    else:
        width = _terminal_width()
        _write(render_text(doc, width))
    if doc["read_error"]:
        print(f"kdash: {doc['read_error']}", file=sys.stderr)
        return 1
    return 0



def _write(text: str) -> None:
    sys.stdout.write(text)  # a closed pipe (`| head`) is handled once, in dash.commands.cli.main
    sys.stdout.flush()


def _cut(text: str, n: int) -> str:
    """`text` in `n` characters, an ellipsis where it was cut."""
    return text if len(text) <= n else text[:max(0, n - 1)] + "…"


def _terminal_width() -> int:
    """The terminal's width (COLUMNS first, as shells set it), 100 for a pipe; 60 to 140."""
    return max(60, min(shutil.get_terminal_size((100, 24)).columns, 140))


def _time_unit(span_s: float) -> tuple[str, float]:
    """The unit a log's span reads in: seconds, minutes, or hours (a 10-hour log in seconds
    reads 35883.0)."""
    if span_s >= 7200:
        return "hours", 3600.0
    if span_s >= 600:
        return "minutes", 60.0
    return "seconds", 1.0


def _prefix_hit(hit: dict[str, Any] | None) -> str:
    """`prefix hit  38.00% of 1,204,880 prefill tokens`, or vLLM's printed rate; a log with
    neither says so."""
    if hit is None:
        return "  prefix hit  - (no prefill token counts or printed hit rates)"
    pct = _fmt(hit["ratio"] * 100)
    if hit["source"] == "prefill_tokens":
        return f"  prefix hit  {pct}% of {hit['tokens']:,} prefill tokens"
    return (f"  prefix hit  {pct}% (the rate the stats lines print: mean of {hit['lines']:,}, "
            f"last {_fmt(hit['last'] * 100)}%)")
