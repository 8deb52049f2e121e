"""Typing for requests that went through django-htmx's middleware."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """An ``HttpRequest`` with ``request.htmx`` (set by ``HtmxMiddleware``); for annotations only."""

    htmx: HtmxDetails
