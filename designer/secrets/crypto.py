"""Encryption at rest with ``cryptography``'s MultiFernet: the first key of ``TRELLIS_SECRET_KEYS`` encrypts, every
key decrypts, so keys are rotated by putting a new one first and re-encrypting (``manage.py rotate_secret_keys``).
Without configured keys, one key is derived from Django's ``SECRET_KEY``."""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from designer.conf import trellis


class UnreadableSecret(Exception):
    """A stored secret no configured key decrypts (a key was removed before rotating)."""


def _derived_key() -> bytes:
    digest = hashlib.sha256(b"trellis-secrets:" + settings.SECRET_KEY.encode()).digest()
    return base64.urlsafe_b64encode(digest)


def configured_by_operator() -> bool:
    return bool(trellis.SECRET_KEYS)


def keys() -> MultiFernet:
    texts = trellis.SECRET_KEYS or [_derived_key().decode()]
    fernets = []
    for position, text in enumerate(texts, start=1):
        try:
            fernets.append(Fernet(text.encode()))
        except ValueError:
            raise ImproperlyConfigured(
                f"TRELLIS_SECRET_KEYS: key {position} is not a Fernet key (32 url-safe base64-encoded bytes; make one "
                "with python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
            ) from None
    return MultiFernet(fernets)


def encrypt(value: str) -> str:
    return keys().encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return keys().decrypt(token.encode()).decode()
    except InvalidToken:
        raise UnreadableSecret("no key of TRELLIS_SECRET_KEYS decrypts this secret: put back the key it was "
                               "encrypted with (after the new one) and run manage.py rotate_secret_keys") from None


def rotate(token: str) -> str:
    """``token`` re-encrypted with the first key (MultiFernet.rotate keeps the original timestamp)."""
    try:
        return keys().rotate(token.encode()).decode()
    except InvalidToken:
        raise UnreadableSecret("a stored secret is not readable with any configured key") from None
