"""A local webhook receiver for the tests: it records every request and answers with the
status codes it is told to, in order (then 200), optionally after a delay. While it
delays, it watches the connection, so that it knows how many requests the sender holds
open at once (a sender that gave up has closed its side)."""

from __future__ import annotations

import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    # socketserver's listen backlog is 5: a dozen deliveries at once on a loaded machine
    # overflowed it, and the kernel's SYN retries then spread their arrival over seconds.
    request_queue_size = 128


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
    max_open: int = 0  # the most requests held open at once

    def __post_init__(self) -> None:
        receiver = self
        lock = threading.Lock()
        open_now = [0]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                receiver.received.append(Received(body, {k.lower(): v for k, v in self.headers.items()},
                                                  time.monotonic()))
                with lock:
                    open_now[0] += 1
                    receiver.max_open = max(receiver.max_open, open_now[0])
                try:
                    if receiver.delay_s and not self._wait_or_hang_up(receiver.delay_s):
                        return
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    self.send_response(status)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:  # the sender gave up waiting
                    pass
                finally:
                    with lock:
                        open_now[0] -= 1

            def _wait_or_hang_up(self, delay_s: float) -> bool:
                """Wait ``delay_s``; False as soon as the sender closes the connection."""
                deadline = time.monotonic() + delay_s
                while time.monotonic() < deadline:
                    readable, _, _ = select.select([self.connection], [], [], 0.05)
                    if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return False
                return True

            def log_message(self, *args: object) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
