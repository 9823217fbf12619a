"""Prometheus export: the latest RunSnapshot as `kdash_*` metrics over HTTP.

A custom prometheus_client Collector maps whatever snapshot `get_snapshot()` returns at scrape
time (see `dash.core.views.metrics_map`); prometheus_client writes the exposition and serves it from its
own threaded HTTP server. Nothing is cached or aggregated here: a scrape reads the snapshot the
dashboard or `kdash serve` last published. Nothing listens unless `start_exporter` is called.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from threading import Thread
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dash import __version__
from dash.core.config import Config
from dash.core.errors import ConfigError
from dash.core.snapshot import RunSnapshot
from dash.core.views.family import Family
from dash.core.views.metrics_map import SOURCES, build_info, families

SnapshotGetter = Callable[[], "RunSnapshot | None"]


class ExporterError(ConfigError):
    """The metrics endpoint could not be opened (port in use, bad host): one line for the user."""


def configured_sources(cfg: Config) -> frozenset[str]:
    """The sources this Config watches, so `kdash_source_up` reports only on those."""
    names = {"nvml"}
    if cfg.log is not None:
        names.add("server_log")
    if cfg.http_enabled:
        names.add("http")
    if cfg.client_log is not None:
        names.add("client_log")
    if cfg.outputs:
        names.add("outputs")
    return frozenset(n for n in SOURCES if n in names)


def to_metric(fam: Family) -> Metric:
    """One pure Family as a prometheus_client metric family."""
    if fam.kind == "summary":
        summary = Metric(fam.name, fam.doc, "summary")
        for label_values, value in fam.samples:
            summary.add_sample(fam.name, dict(zip(fam.labels, label_values, strict=False)), value)
        for suffix, label_values, value in fam.extra:
            summary.add_sample(fam.name + suffix, dict(zip(fam.labels, label_values, strict=False)), value)
        return summary
    cls = CounterMetricFamily if fam.kind == "counter" else GaugeMetricFamily
    metric: Any = cls(fam.name, fam.doc, labels=list(fam.labels))
    for label_values, value in fam.samples:
        metric.add_metric(list(label_values), value)
    return metric  # type: ignore[no-any-return]


class SnapshotCollector(Collector):
    """Maps the latest snapshot to metric families on every scrape (runs in the server's thread).

    `get_snapshot` must be safe to call from another thread: returning the last published frozen
    snapshot (a single attribute read) is.
    """

    def __init__(self, get_snapshot: SnapshotGetter, configured: frozenset[str]) -> None:
        self._get = get_snapshot
        self._configured = configured

    def collect(self) -> Iterator[Metric]:
        snap = self._get()
        if snap is None:
            # Started but nothing published yet: say only who we are.
            yield to_metric(build_info(__version__))
            return
        for fam in families(snap, self._configured, __version__):
            yield to_metric(fam)

    def describe(self) -> list[Metric]:
        # Empty: registering must not take a snapshot (it may not exist yet).
        return []


@dataclass
class ExporterHandle:
    """A running metrics endpoint; `close()` stops it and frees the port."""

    host: str
    port: int
    _server: Any
    _thread: Thread

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving and close the listening socket (idempotent)."""
        if self._server is None:
            return
        server, self._server = self._server, None
        server.shutdown()
        server.server_close()
        self._thread.join(timeout=5)


def build_registry(get_snapshot: SnapshotGetter, configured: frozenset[str]) -> CollectorRegistry:
    """A private registry (not the global one) holding the kdash collector and process metrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(get_snapshot, configured))
    ProcessCollector(namespace="kdash", registry=registry)
    return registry


def start_exporter(cfg: Config, get_snapshot: SnapshotGetter) -> ExporterHandle:
    """Serve `/metrics` on cfg.metrics_host:cfg.metrics_port (port 0 picks a free one).

    Raises ExporterError (a ConfigError: the CLI prints it as one line, exit 2) when the address
    cannot be bound.
    """
    if cfg.metrics_port is None:
        raise ExporterError("no metrics port configured (--metrics-port N)")
    registry = build_registry(get_snapshot, configured_sources(cfg))
    host = cfg.metrics_host or "127.0.0.1"
    try:
        server, thread = start_http_server(cfg.metrics_port, addr=host, registry=registry)
    except (OSError, socket.gaierror) as exc:
        reason = exc.strerror or str(exc)
        raise ExporterError(f"cannot serve metrics on {host}:{cfg.metrics_port}: {reason}") from None
    bound = server.server_address
    return ExporterHandle(host=str(bound[0]), port=int(bound[1]), _server=server, _thread=thread)
