"""Login throttling: after too many failed sign-ins for one username or from one address, refuse more for a while.

Counters live in Django's cache (settings.CACHES). The default LocMemCache is
per process, which is right for development and the single web process of
`make run`; a production setup with several web processes needs a shared
cache (the database cache or Redis), otherwise each process counts on its own.

A window opens at the first failure and lasts TRELLIS_LOGIN_LOCKOUT_SECONDS;
once TRELLIS_LOGIN_MAX_FAILURES failures are counted in it, every further
attempt for that username (or from that address) is refused until it closes,
whether the password is right or not. Unknown usernames are counted exactly
like known ones, so the refusal says nothing about which accounts exist.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.forms.forms import NON_FIELD_ERRORS
from django.http import HttpRequest, HttpResponse

THROTTLED = "throttled"
_PREFIX = "trellis:login-failures:"


def max_failures() -> int:
    return int(getattr(settings, "TRELLIS_LOGIN_MAX_FAILURES", 5))


def lockout_seconds() -> int:
    return int(getattr(settings, "TRELLIS_LOGIN_LOCKOUT_SECONDS", 900))


def client_address(request: HttpRequest | None) -> str:
    """The address failures are counted for.

    Behind the TLS proxy the settings trust (DJANGO_BEHIND_TLS_PROXY), REMOTE_ADDR
    is the proxy for everyone, so the address that proxy appended last to
    X-Forwarded-For is used instead; earlier entries are client-supplied and ignored.
    """
    if request is None:
        return ""
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None):
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last
    return str(request.META.get("REMOTE_ADDR", ""))


def _keys(username: str, address: str) -> list[str]:
    # usernames are hashed: any text (spaces, very long, non-ASCII) gives a valid cache key of fixed size
    keys = []
    if username.strip():
        digest = hashlib.sha256(username.strip().casefold().encode()).hexdigest()
        keys.append(f"{_PREFIX}user:{digest}")
    if address:
        keys.append(f"{_PREFIX}ip:{hashlib.sha256(address.encode()).hexdigest()}")
    return keys


def locked_for(username: str, address: str) -> int:
    """Seconds until attempts for this username and address are allowed again (0: allowed now)."""
    now = time.time()
    wait = 0.0
    for entry in cache.get_many(_keys(username, address)).values():
        count, started = entry
        if count >= max_failures():
            wait = max(wait, started + lockout_seconds() - now)
    return max(0, math.ceil(wait))


def record_failure(username: str, address: str) -> None:
    now = time.time()
    window = lockout_seconds()
    for key in _keys(username, address):
        count, started = cache.get(key) or (0, now)
        if started + window <= now:
            count, started = 0, now
        remaining = max(1, math.ceil(started + window - now))
        cache.set(key, (count + 1, started), timeout=remaining)


def clear_username(username: str) -> None:
    """A successful sign-in forgets that username's failures (the address keeps its count)."""
    cache.delete_many(_keys(username, "")[:1] if username.strip() else [])


def refusal_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return f"Too many failed sign-in attempts; try again in {minutes} minute{'s' if minutes != 1 else ''}."


class ThrottledFormMixin:
    """For AuthenticationForm subclasses: refuse while locked, count failed attempts, forget them on success."""

    request: HttpRequest | None
    data: Any

    def clean(self) -> dict[str, Any]:
        username = str(self.data.get("username", ""))
        address = client_address(self.request)
        wait = locked_for(username, address)
        if wait:
            # checked before authenticate(): a locked attempt is not judged, so it cannot confirm a password
            raise ValidationError(refusal_message(wait), code=THROTTLED)
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except ValidationError:
            record_failure(username, address)
            raise
        if getattr(self, "user_cache", None) is not None:  # signed in, not merely a form with a field missing
            clear_username(username)
        return cleaned


class ThrottledAuthenticationForm(ThrottledFormMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledFormMixin, AdminAuthenticationForm):
    pass


class ThrottledLoginView(LoginView):
    """The site's login page: a refused attempt answers 429 with the message in the form's errors."""

    form_class = ThrottledAuthenticationForm

    def form_invalid(self, form: forms.Form) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error(NON_FIELD_ERRORS, code=THROTTLED):
            response.status_code = 429
        return response
