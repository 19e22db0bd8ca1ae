"""A local webhook receiver for the tests: it records every request and answers with the
status codes it is told to, in order (then 200), optionally after a delay."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    body: bytes
    headers: dict[str, str]
    at: float


@dataclass
class Receiver:
    statuses: list[int] = field(default_factory=list)
    delay_s: float = 0.0
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                receiver.received.append(Received(body, {k.lower(): v for k, v in self.headers.items()},
                                                  time.monotonic()))
                if receiver.delay_s:
                    time.sleep(receiver.delay_s)
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                try:
                    self.send_response(status)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:  # the sender gave up waiting
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
