"""Signed webhook calls: ``Trellis-Signature: t=<unix seconds>,v1=<hex>``.

``v1`` is HMAC-SHA256, keyed with the webhook's signing secret, over ``f"{t}."`` followed by the request
body's exact bytes (nothing re-serialised, so the caller signs what it sends). A call is accepted when one of
its ``v1`` values matches (compared in constant time) and ``t`` is within ``REPLAY_WINDOW`` of the server's
clock, so a captured request cannot be sent again later. Several ``v1`` values are allowed so a caller can
sign with an old and a new secret while rotating. Inside the window, a call whose timestamp and body were
already accepted is a replay: ``verify`` returns the call's ``replay_key`` and the service refuses a key it
has seen (``SignatureReplayed``), remembering keys in the database until the window has passed.

The signing secret is not stored: it is derived from the webhook's random salt and the server's
``SECRET_KEY`` (an HMAC of one with the other), so a copy of the database alone cannot sign calls. Rotating
``SECRET_KEY`` changes every signing secret unless the old key stays in ``SECRET_KEY_FALLBACKS``, which
verification also tries. Pure functions apart from reading those two settings; no Django models.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Final

from django.conf import settings

from designer.core.errors import DesignerError

HEADER: Final[str] = "Trellis-Signature"
#: How far ``t`` may be from the server's clock, either way, in seconds (five minutes).
REPLAY_WINDOW: Final[int] = 300
SECRET_PREFIX: Final[str] = "whsec_"
_CONTEXT: Final[bytes] = b"trellis.webhook-signing.v1:"
#: A header longer than this is refused before any parsing (a caller signs with a few secrets at most).
_MAX_HEADER: Final[int] = 1000


class SignatureRefused(DesignerError):
    """A signed webhook's call whose signature is missing, malformed, wrong or outside the replay window."""

    code = "trigger.signature_invalid"
    status = 401


class SignatureMissing(SignatureRefused):
    code = "trigger.signature_missing"


class SignatureExpired(SignatureRefused):
    code = "trigger.signature_expired"


class SignatureReplayed(SignatureRefused):
    code = "trigger.signature_replayed"


@dataclass(frozen=True, slots=True)
class SignedCall:
    """A call whose signature matched: ``replay_key`` names it (its timestamp and body), ``expires`` (Unix
    seconds) is when its timestamp leaves the window, after which the timestamp check alone refuses it."""

    replay_key: str
    expires: int


def new_salt() -> str:
    return secrets.token_hex(32)


def _derive(key: str, salt: str) -> str:
    digest = hmac.new(key.encode(), _CONTEXT + salt.encode(), hashlib.sha256).digest()
    return SECRET_PREFIX + base64.urlsafe_b64encode(digest).decode().rstrip("=")


def signing_secret(salt: str) -> str:
    """The secret a caller signs with, for a webhook with ``salt`` (under the current ``SECRET_KEY``)."""
    return _derive(settings.SECRET_KEY, salt)


def _candidate_secrets(salt: str) -> list[str]:
    return [_derive(key, salt) for key in (settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", []))]


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The header value for ``body`` sent at ``timestamp`` (what a caller computes)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def _parse(header: str) -> tuple[int, list[str]]:
    timestamp: int | None = None
    macs: list[str] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            if not value.isdigit() or len(value) > 12:
                raise SignatureRefused(f"the {HEADER} header's t= is not a Unix time in seconds: {value[:40]!r}",
                                       header=HEADER)
            timestamp = int(value)
        elif key == "v1":
            macs.append(value.lower())
    if timestamp is None or not macs:
        raise SignatureRefused(f"the {HEADER} header must look like 't=<unix seconds>,v1=<hex HMAC-SHA256>'",
                               header=HEADER)
    return timestamp, macs


def verify(*, salt: str, header: str | None, body: bytes, now: float) -> SignedCall:
    """Accept the call or raise ``SignatureMissing`` / ``SignatureRefused`` / ``SignatureExpired``. Whether the
    call is a replay is the caller's to check, with the returned ``replay_key`` (it needs storage)."""
    if not header or not header.strip():
        raise SignatureMissing(f"this webhook needs signed calls: send a {HEADER} header "
                               "'t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">' (see the README)",
                               header=HEADER)
    if len(header) > _MAX_HEADER:
        raise SignatureRefused(f"the {HEADER} header is longer than {_MAX_HEADER} characters", header=HEADER)
    timestamp, macs = _parse(header)
    matched = False
    for secret in _candidate_secrets(salt):
        expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
        for mac in macs:
            # compare_digest on every pair, no early exit on the first byte that differs
            matched |= hmac.compare_digest(expected.encode(), mac.encode("ascii", "replace"))
    if not matched:
        raise SignatureRefused(f"the {HEADER} signature does not match: sign '<t>.' followed by the exact body "
                               "bytes with HMAC-SHA256 and this webhook's signing secret", header=HEADER)
    # Checked after the MAC, so the answer does not tell an unsigned caller which timestamps are fresh.
    age = now - timestamp
    if abs(age) > REPLAY_WINDOW:
        raise SignatureExpired(
            f"the signature's timestamp is {int(abs(age))} s {'old' if age > 0 else 'in the future'}; "
            f"signed calls are accepted within {REPLAY_WINDOW // 60} minutes of the server's clock "
            "(sign each call when sending it, and check the caller's clock)", header=HEADER,
            window_seconds=REPLAY_WINDOW)
    # The same timestamp and body is the same call whichever secret or v1 list signed it.
    key = hashlib.sha256(f"{timestamp}.".encode() + body).hexdigest()
    return SignedCall(replay_key=key, expires=timestamp + REPLAY_WINDOW)


def replayed() -> SignatureReplayed:
    """The refusal of a call whose ``replay_key`` was already accepted."""
    return SignatureReplayed(
        f"this signed call was already accepted: a {HEADER} signature is good for one call. Sign each call "
        "when sending it (a new t=); two calls with the same body need different timestamps",
        header=HEADER, window_seconds=REPLAY_WINDOW)
