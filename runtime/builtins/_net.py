"""Built-ins that wait on the outside world: HTTP requests and timed waits."""

from __future__ import annotations

import asyncio
import ipaddress
import json as _json
import os
import socket
from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypedDict

import httpcore
import httpx
from pydantic import Field

from runtime._errors import TaskError
from runtime._registry import TIMER_ATTRIBUTE

#: Upper bounds a document cannot raise: a workflow step must not hold a worker indefinitely.
MAX_TIMEOUT_SECONDS = 60.0
MAX_RESPONSE_BYTES = 10_000_000
MAX_WAIT_SECONDS = 300.0

#: Comma-separated host names (or ``*``) that may be reached even though they resolve to a
#: loopback, private, link-local or otherwise non-public address.
ALLOWED_HOSTS_ENV = "TRELLIS_HTTP_ALLOWED_HOSTS"

HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


class HttpResponse(TypedDict):
    status: int
    ok: bool
    url: str
    headers: dict[str, str]
    json: Any
    text: str


def _allowed_hosts() -> frozenset[str]:
    raw = os.environ.get(ALLOWED_HOSTS_ENV, "")
    return frozenset(entry.strip().lower() for entry in raw.split(",") if entry.strip())


def _host_allowed(host: str) -> bool:
    allowed = _allowed_hosts()
    return "*" in allowed or host.lower() in allowed


async def _public_addresses(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, or a ``TaskError`` if any of them is not public."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise TaskError(f"http_request: cannot resolve host {host!r}: {exc}", host=host) from None
    addresses: list[str] = []
    for info in infos:
        text = str(info[4][0])
        address = ipaddress.ip_address(text.split("%")[0])
        inside = embedded_ipv4(address)
        if not address.is_global or (inside is not None and not inside.is_global):
            carries = f" (it carries the IPv4 address {inside})" if inside is not None else ""
            raise TaskError(
                f"http_request: host {host!r} resolves to the non-public address {address}{carries}; "
                f"requests to loopback, private and link-local networks are refused. "
                f"An administrator can allow it by adding the host to {ALLOWED_HOSTS_ENV}",
                host=host, address=str(address),
            )
        addresses.append(text)
    return list(dict.fromkeys(addresses))


_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052 well-known prefix: the gateway connects to the IPv4
_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated IPv4-compatible addresses (::a.b.c.d)
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # SIIT IPv4-translated addresses


def embedded_ipv4(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for, where a network could deliver to it.

    IPv4-mapped (``::ffff:a.b.c.d``), IPv4-compatible (``::a.b.c.d``), SIIT-translated, NAT64
    (``64:ff9b::a.b.c.d``), 6to4 (``2002:AABB:CCDD::``) and Teredo (``2001:0::``, the client) all
    reach an IPv4 host: ``[::7f00:1]`` is 127.0.0.1 to a stack that routes it so. Python's
    ``is_global`` does not look inside all of these, so they are unwrapped here.
    """
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _NAT64 or address in _TRANSLATED:
        return low
    if address in _COMPATIBLE and int(address) > 1:  # not :: (unspecified) nor ::1 (loopback, refused anyway)
        return low
    return None


async def _refuse_private_addresses(request: httpx.Request) -> None:
    """Keep workflow documents from using the server to reach its own network.

    A document is user input; without this, anyone who can edit a workflow could
    read cloud metadata endpoints or internal services through the worker. It
    runs as an httpx request hook, so every redirect hop is checked too (also
    when an operator's proxy, not ``_PublicOnlyBackend``, makes the connection).
    """
    host = request.url.host
    if not _host_allowed(host):
        await _public_addresses(host, request.url.port or 0)


class _PublicOnlyBackend(httpcore.AsyncNetworkBackend):
    """Connects to the very addresses it has just checked.

    The request hook checks the host name, but a plain connection would resolve
    the name again, and a DNS answer that changes in between (DNS rebinding)
    would reach a private address after all. TLS still verifies the certificate
    against the host name: httpcore passes the origin's name to ``start_tls``.
    """

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if _host_allowed(host):
            return await self._inner.connect_tcp(host, port, timeout=timeout, local_address=local_address,
                                                 socket_options=socket_options)
        failure: httpcore.ConnectError | None = None
        for address in await _public_addresses(host, port):
            try:
                return await self._inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                                     socket_options=socket_options)
            except httpcore.ConnectError as exc:  # try the next address, as a resolver-based connect would
                failure = exc
        raise failure or httpcore.ConnectError(f"no address to connect to for {host!r}")

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise TaskError("http_request: unix sockets are not reachable from workflows")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _PublicOnlyTransport(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        # httpx offers no parameter for the network backend, so the pool it built is replaced by an
        # equivalent one that connects through _PublicOnlyBackend. tests/runtime/test_http_guard.py
        # fails if a future httpx stops using ``_pool``.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(), network_backend=_PublicOnlyBackend(),
        )


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


async def http_request(
    url: Annotated[str, Field(min_length=1, max_length=8_000)],
    method: HttpMethod = "GET",
    headers: dict[str, str] | None = None,
    params: dict[str, str | int | float | bool] | None = None,
    json: Any = None,
    body: str | None = None,
    timeout: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_SECONDS)] = 10.0,
    max_bytes: Annotated[int, Field(gt=0, le=MAX_RESPONSE_BYTES)] = 1_000_000,
    follow_redirects: bool = False,
    raise_for_status: bool = False,
) -> HttpResponse:
    """Send an HTTP request and return its status, headers, text and (for JSON responses) parsed JSON.

    ``timeout`` bounds the whole exchange in seconds (at most 60); a body
    larger than ``max_bytes`` fails the step. A 4xx/5xx status is a normal
    result (``ok`` false) unless ``raise_for_status``. Hosts that resolve to
    loopback, private or link-local addresses are refused unless an
    administrator lists them in ``TRELLIS_HTTP_ALLOWED_HOSTS``.
    """
    if json is not None and body is not None:
        raise TaskError("http_request: give either 'json' or 'body', not both")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise TaskError(f"http_request: invalid url {url!r}: {exc}", url=url) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise TaskError(f"http_request: url {url!r} must be an absolute http:// or https:// address", url=url)
    try:
        async with asyncio.timeout(timeout):
            async with httpx.AsyncClient(
                transport=_PublicOnlyTransport(), timeout=timeout, follow_redirects=follow_redirects,
                event_hooks={"request": [_refuse_private_addresses]},
            ) as client:
                async with client.stream(
                    method, parsed, headers=headers, params=params, json=json,
                    content=body.encode() if body is not None else None,
                ) as response:
                    content = bytearray()
                    async for chunk in response.aiter_bytes():
                        content.extend(chunk)
                        if len(content) > max_bytes:
                            raise TaskError(
                                f"http_request: {method} {url} returned more than {max_bytes} bytes",
                                url=url, max_bytes=max_bytes,
                            )
    except TimeoutError:
        raise TaskError(f"http_request: {method} {url} timed out after {timeout:g} s", url=url) from None
    except httpx.HTTPError as exc:
        raise TaskError(f"http_request: {method} {url} failed: {type(exc).__name__}: {exc}", url=url) from None

    text = bytes(content).decode(response.encoding or "utf-8", errors="replace")
    data: Any = None
    if "json" in response.headers.get("content-type", "") and text.strip():
        try:
            data = _json.loads(text, parse_constant=_no_constants)
        except ValueError:
            data = None
    if raise_for_status and response.status_code >= 400:
        raise TaskError(
            f"http_request: {method} {url} returned HTTP {response.status_code}",
            url=url, status=response.status_code,
        )
    return HttpResponse(
        status=response.status_code,
        ok=response.status_code < 400,
        url=str(response.url),
        headers={key.lower(): value for key, value in response.headers.items()},
        json=data,
        text=text,
    )


async def wait(seconds: Annotated[float, Field(ge=0, le=MAX_WAIT_SECONDS)]) -> float:
    """Pause this step for ``seconds`` (at most 300) without blocking other work; returns the seconds waited.

    An engine that suspends runs never calls this: the run waits in its saved state, holding no worker."""
    await asyncio.sleep(seconds)
    return seconds


# An engine that suspends runs never calls ``wait``: the frame sleeps in the run's state, no step holds a worker.
setattr(wait, TIMER_ATTRIBUTE, "seconds")
