"""Login throttling: after too many sign-in attempts for one username from one address, or from one address
whatever the username, refuse more for a while.

The lock is on the account and the address *together* (TRELLIS_LOGIN_MAX_FAILURES for one username from one
address): a lock by username alone let anyone, anywhere, lock a named account out for the whole window with five
wrong passwords. One address trying many usernames is limited on its own (TRELLIS_LOGIN_MAX_ADDRESS_FAILURES),
which locks that address only. So nobody can lock another person out from elsewhere; the cost is that a guesser
with many addresses gets that many tries per address (see the README's "Sign-in limits").

Counters are rows of ``LoginAttemptWindow`` in the database, so every web process and thread shares
them. An attempt is counted *before* its password is checked, by one atomic UPDATE per counter
(``count = count + 1``) whose result decides: once a count passes its limit the attempt is refused
unjudged. Parallel attempts therefore each get a different count, and no more than the limit are ever
judged in one window, however many arrive at once (a read-then-write counter let twenty parallel guesses
all through). A successful sign-in clears the pair's count and gives its address slot back.

A window opens at the first attempt and lasts TRELLIS_LOGIN_LOCKOUT_SECONDS. Unknown usernames are
counted exactly like known ones, so the refusal says nothing about which accounts exist.
"""

from __future__ import annotations

import hashlib
import math
from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Case, F, Value, When
from django.forms.forms import NON_FIELD_ERRORS
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from designer.conf import trellis
from designer.models import LoginAttemptWindow

THROTTLED = "throttled"
_PREFIX = "trellis:login-failures:"


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


def _user_part(username: str) -> str:
    # usernames are hashed: any text (spaces, very long, non-ASCII) gives a valid key of fixed size
    return hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:40]


def _keys(username: str, address: str) -> list[tuple[str, int]]:
    """The counters an attempt counts against, each with its limit: the username from this address, and the
    address whatever the username."""
    keys = []
    if username.strip():
        keys.append((f"pair:{_user_part(username)}:{hashlib.sha256(address.encode()).hexdigest()[:32]}",
                     trellis.LOGIN_MAX_FAILURES))
    if address:
        keys.append(("ip:" + hashlib.sha256(address.encode()).hexdigest(), trellis.LOGIN_MAX_ADDRESS_FAILURES))
    return keys


def _seconds_left(window_ends: Any, now: Any) -> int:
    return max(0, math.ceil((window_ends - now).total_seconds()))


def locked_for(username: str, address: str) -> int:
    """Seconds until attempts for this username and address are allowed again (0: allowed now)."""
    now = timezone.now()
    limits = dict(_keys(username, address))
    rows = LoginAttemptWindow.objects.filter(key__in=limits, window_ends__gt=now)
    return max((_seconds_left(row.window_ends, now) for row in rows if row.count >= limits[row.key]), default=0)


def _count(key: str) -> LoginAttemptWindow:
    """Add one attempt to ``key``'s counter in one UPDATE (a new window when the old one ended); the row after it."""
    now = timezone.now()
    fresh_end = now + timedelta(seconds=trellis.LOGIN_LOCKOUT_SECONDS)
    expired = When(window_ends__lte=now, then=Value(1))
    for _ in range(3):
        with transaction.atomic():
            updated = LoginAttemptWindow.objects.filter(key=key).update(
                count=Case(expired, default=F("count") + 1),
                window_ends=Case(When(window_ends__lte=now, then=Value(fresh_end)), default=F("window_ends")),
            )
            if not updated:
                try:
                    with transaction.atomic():
                        return LoginAttemptWindow.objects.create(key=key, count=1, window_ends=fresh_end)
                except IntegrityError:  # another attempt created it first: count on that row
                    continue
            # Still inside our transaction, so the row holds our increment and nobody else's yet.
            return LoginAttemptWindow.objects.get(key=key)
    raise RuntimeError(f"could not count a sign-in attempt for {key}")


def count_attempt(username: str, address: str) -> int:
    """Count one attempt against the username from this address and against the address; seconds it must wait
    (0: it may be judged)."""
    now = timezone.now()
    wait = 0
    for key, limit in _keys(username, address):
        row = _count(key)
        if row.count > limit:
            wait = max(wait, _seconds_left(row.window_ends, now), 1)
    return wait


def forget_success(username: str, address: str) -> None:
    """A successful sign-in: the pair's count is cleared and the address gets its slot back."""
    keys = [key for key, _limit in _keys(username, address)]
    if username.strip():
        LoginAttemptWindow.objects.filter(key=keys[0]).delete()
    if address:
        LoginAttemptWindow.objects.filter(key=keys[-1], count__gt=0).update(count=F("count") - 1)
    # Ended windows are never read again; drop them here, where a write happens anyway.
    LoginAttemptWindow.objects.filter(window_ends__lt=timezone.now() - timedelta(days=1)).delete()


def clear_username(username: str) -> None:
    """Forget the username's counts from every address (the addresses keep theirs)."""
    if username.strip():
        LoginAttemptWindow.objects.filter(key__startswith=f"pair:{_user_part(username)}:").delete()


def refusal_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return f"Too many failed sign-in attempts; try again in {minutes} minute{'s' if minutes != 1 else ''}."


class ThrottledFormMixin:
    """For AuthenticationForm subclasses: refuse while locked, count failed attempts, forget them on success."""

    request: HttpRequest | None
    data: Any

    def clean(self) -> dict[str, Any]:
        username = str(self.data.get("username", ""))
        password = self.data.get("password", "")
        address = client_address(self.request)
        if not password:
            # Nothing will be judged (the password field reports itself), so nothing is counted; a lock still holds.
            wait = locked_for(username, address)
        else:
            # Counted before authenticate(): a refused attempt is not judged, so it cannot confirm a password.
            wait = count_attempt(username, address)
        if wait:
            raise ValidationError(refusal_message(wait), code=THROTTLED)
        cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        if getattr(self, "user_cache", None) is not None:  # signed in, not merely a form with a field missing
            forget_success(username, address)
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
