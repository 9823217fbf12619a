"""A real HTTP server on 127.0.0.1 for the simulated SGLang server (stdlib, in a thread).

It is bound while the simulated server is up and closed while it is crashed or restarting, so a
poller sees connection refused, as with a dead server; it comes back on the same port.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from dash.sim.endpoints import Response

Answer = Callable[[str, str | None], Response]
"""(path, the request's `Authorization` header) -> the response."""


class _Handler(BaseHTTPRequestHandler):
    server_version = "uvicorn"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    """Connections stay open between requests, as uvicorn keeps them (a poller reuses one)."""

    def setup(self) -> None:
        super().setup()
        self.server.connections.add(self.connection)  # type: ignore[attr-defined]

    def finish(self) -> None:
        self.server.connections.discard(self.connection)  # type: ignore[attr-defined]
        super().finish()

    def do_GET(self) -> None:
        answer: Answer = self.server.answer  # type: ignore[attr-defined]
        resp = answer(self.path, self.headers.get("Authorization"))
        self.send_response(resp.status)
        self.send_header("content-type", resp.content_type)
        self.send_header("content-length", str(len(resp.body)))
        self.end_headers()
        self.wfile.write(resp.body)

    def log_message(self, format: str, *args: object) -> None:
        """Silent: the simulated server log is written by the simulation, not here."""


class SimHttpServer:
    """Starts and stops a ThreadingHTTPServer on one port, answering with `answer(path,
    authorization)`."""

    def __init__(self, answer: Answer, port: int = 0, host: str = "127.0.0.1") -> None:
        self._answer = answer
        self.host = host
        self.port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def up(self) -> bool:
        return self._server is not None

    def bind(self) -> int:
        """Bind the port now (port 0: an ephemeral one) without serving yet; returns the port."""
        if self._server is None:
            server = ThreadingHTTPServer((self.host, self.port), _Handler)
            server.daemon_threads = True
            server.answer = self._answer  # type: ignore[attr-defined]
            server.connections = set()  # type: ignore[attr-defined]
            self._server = server
            self.port = server.server_address[1]
        return self.port

    def start(self) -> None:
        """Serve (binding first if needed). An OSError (port taken) propagates to the caller."""
        if self._thread is not None:
            return
        self.bind()
        assert self._server is not None
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name="kdash-sim-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Close the socket: clients now get connection refused."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        if thread is not None:
            server.shutdown()
            thread.join(timeout=2)
        server.server_close()
        # A dead server drops its kept-alive connections too: the poller must see it go.
        for conn in list(server.connections):  # type: ignore[attr-defined]
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
