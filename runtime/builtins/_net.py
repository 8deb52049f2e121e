"""Built-ins that wait on the outside world: HTTP requests and timed waits."""

from __future__ import annotations

import asyncio
import ipaddress
import json as _json
import os
from typing import Annotated, Any, Literal, TypedDict

import httpx
from pydantic import Field

from runtime._errors import TaskError

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


async def _refuse_private_addresses(request: httpx.Request) -> None:
    """Keep workflow documents from using the server to reach its own network.

    A document is user input; without this, anyone who can edit a workflow could
    read cloud metadata endpoints or internal services through the worker. It
    runs as an httpx request hook, so every redirect hop is checked too.
    """
    host = request.url.host
    allowed = _allowed_hosts()
    if "*" in allowed or host.lower() in allowed:
        return
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, request.url.port or 0)
    except OSError as exc:
        raise TaskError(f"http_request: cannot resolve host {host!r}: {exc}", host=host) from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not address.is_global:
            raise TaskError(
                f"http_request: host {host!r} resolves to the non-public address {address}; "
                f"requests to loopback, private and link-local networks are refused. "
                f"An administrator can allow it by adding the host to {ALLOWED_HOSTS_ENV}",
                host=host, address=str(address),
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
                timeout=timeout, follow_redirects=follow_redirects,
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
    """Pause this step for ``seconds`` (at most 300) without blocking other work; returns the seconds waited."""
    await asyncio.sleep(seconds)
    return seconds
