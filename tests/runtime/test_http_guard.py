"""http_request connects only to addresses it has checked, so DNS rebinding cannot reach the server's network.

A name that resolves to a public address when checked and to 127.0.0.1 when connecting (a DNS
answer an attacker controls, with a zero TTL) must be refused, not connected to.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from runtime.errors import TaskError
from runtime.state import RuntimeContext
from runtime.tasks import builtin_registry

PUBLIC_ADDRESS = "93.184.215.14"  # a global unicast address; never connected to in these tests


class _Recorder(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "6")
        self.end_headers()
        self.wfile.write(b"inside")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def internal_server() -> Iterator[tuple[int, list[str]]]:
    hits: list[str] = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Recorder,), {"hits": hits}))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1], hits
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def rebinding_dns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``rebind.example``: a public address on the first lookup, 127.0.0.1 on every later one."""
    real = socket.getaddrinfo
    answers: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.example":
            return real(host, port, *args, **kwargs)
        address = PUBLIC_ADDRESS if not answers else "127.0.0.1"
        answers.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, int(port or 0)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.delenv("TRELLIS_HTTP_ALLOWED_HOSTS", raising=False)
    return answers


def _request(url: str) -> Any:
    spec = builtin_registry().get("http_request")
    return asyncio.run(spec.bind({"url": url, "timeout": 5}, RuntimeContext(node_id="fetch"))())


def test_a_name_that_rebinds_to_loopback_is_refused(internal_server: tuple[int, list[str]],
                                                    rebinding_dns: list[str]) -> None:
    port, hits = internal_server

    with pytest.raises(TaskError, match="'rebind.example' resolves to the non-public address 127.0.0.1"):
        _request(f"http://rebind.example:{port}/secret")

    assert hits == []
    assert rebinding_dns[0] == PUBLIC_ADDRESS and rebinding_dns[-1] == "127.0.0.1"


def test_an_allowed_host_still_connects_by_name(internal_server: tuple[int, list[str]],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    port, hits = internal_server
    monkeypatch.setenv("TRELLIS_HTTP_ALLOWED_HOSTS", "localhost")

    response = _request(f"http://localhost:{port}/allowed")

    assert response["status"] == 200 and response["text"] == "inside"
    assert hits == ["/allowed"]


@pytest.mark.parametrize(("host", "carried"), [
    ("::7f00:1", "127.0.0.1"),            # IPv4-compatible
    ("::127.0.0.1", "127.0.0.1"),
    ("::a9fe:a9fe", "169.254.169.254"),   # cloud metadata, IPv4-compatible
    ("::ffff:127.0.0.1", "127.0.0.1"),    # IPv4-mapped
    ("::ffff:0:a00:1", "10.0.0.1"),       # SIIT translated
    ("64:ff9b::7f00:1", "127.0.0.1"),     # NAT64 well-known prefix
    ("64:ff9b::c0a8:101", "192.168.1.1"),
    ("2002:7f00:1::1", "127.0.0.1"),      # 6to4
    ("2002:a00:1::1", "10.0.0.1"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1"),  # Teredo, client 127.0.0.1 (bits inverted)
])
def test_ipv6_forms_of_an_internal_ipv4_address_are_refused(host: str, carried: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRELLIS_HTTP_ALLOWED_HOSTS", raising=False)
    with pytest.raises(TaskError) as caught:
        _request(f"http://[{host}]:9/")
    assert "non-public address" in caught.value.message
    assert f"it carries the IPv4 address {carried}" in caught.value.message


def test_embedded_addresses_are_unwrapped_only_where_they_exist() -> None:
    import ipaddress

    from runtime.builtins._net import embedded_ipv4

    assert embedded_ipv4(ipaddress.ip_address("64:ff9b::808:808")) == ipaddress.IPv4Address("8.8.8.8")
    assert embedded_ipv4(ipaddress.ip_address("2606:4700::1111")) is None  # an ordinary global address
    assert embedded_ipv4(ipaddress.ip_address("::1")) is None
    assert embedded_ipv4(ipaddress.ip_address("127.0.0.1")) is None
