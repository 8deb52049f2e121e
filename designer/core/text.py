"""Checks of the short texts the services take from forms and API bodies."""

from __future__ import annotations

from designer.core.errors import BadRequest


def short_text(value: object, *, field: str, max_length: int, missing: str, too_long: str) -> str:
    """``value`` stripped: a required one-line text (a name, a username or email) of at most ``max_length``
    characters and no NUL, which PostgreSQL text columns cannot hold. ``missing`` and ``too_long`` are the
    messages of the ``BadRequest`` (naming ``field``) when it is absent or blank, or too long or holds a NUL."""
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(missing, field=field)
    text = value.strip()
    if len(text) > max_length or "\x00" in text:
        raise BadRequest(too_long, field=field)
    return text
