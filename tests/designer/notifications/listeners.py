"""Real listeners on loopback for the notification tests: an SMTP server that keeps what it is sent (the worker
uses Django's SMTP backend against it) and an HTTP server that keeps the webhook calls it answers."""

from __future__ import annotations

import email
import email.policy
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Inbox:
    messages: list[EmailMessage] = field(default_factory=list)


class _Smtp(socketserver.StreamRequestHandler):
    """Just enough SMTP for Django's backend: EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT."""

    inbox: Inbox

    def _say(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self) -> None:
        self._say("220 sink ready")
        while line := self.rfile.readline():
            verb = line.decode(errors="replace").strip().split(" ")[0].upper()
            if verb == "EHLO":
                self._say("250-sink")
                self._say("250 8BITMIME")
            elif verb in ("HELO", "MAIL", "RCPT", "RSET", "NOOP"):
                self._say("250 ok")
            elif verb == "DATA":
                self._say("354 go on")
                data = b""
                while (chunk := self.rfile.readline()) not in (b".\r\n", b""):
                    data += chunk[1:] if chunk.startswith(b"..") else chunk
                self.inbox.messages.append(email.message_from_bytes(data, policy=email.policy.default))  # type: ignore[arg-type]
                self._say("250 kept")
            elif verb == "QUIT":
                self._say("221 bye")
                return
            else:
                self._say("502 not here")


@contextmanager
def smtp_sink() -> Iterator[tuple[int, Inbox]]:
    inbox = Inbox()
    handler = type("Handler", (_Smtp,), {"inbox": inbox})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], inbox
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Calls:
    received: list[dict[str, Any]] = field(default_factory=list)
    #: Statuses to answer, in order; the last one repeats.
    answers: list[int] = field(default_factory=lambda: [204])


@contextmanager
def webhook_listener(answers: list[int] | None = None) -> Iterator[tuple[str, Calls]]:
    calls = Calls(answers=answers or [204])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the standard library's name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            calls.received.append({"headers": dict(self.headers), "body": body, "path": self.path})
            status = calls.answers[min(len(calls.received), len(calls.answers)) - 1]
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks/trellis", calls
    finally:
        server.shutdown()
        server.server_close()
