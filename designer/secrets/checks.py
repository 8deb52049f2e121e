"""``manage.py check --deploy``: warn when teams' secrets are encrypted with a key derived from SECRET_KEY."""

from __future__ import annotations

from typing import Any

from django.core.checks import Tags, Warning, register

from designer.secrets import crypto


@register(Tags.security, deploy=True)
def secret_keys_configured(app_configs: Any, **kwargs: Any) -> list[Warning]:
    if crypto.configured_by_operator():
        return []
    return [Warning(
        "TRELLIS_SECRET_KEYS is not set: teams' secrets are encrypted with a key derived from SECRET_KEY, so "
        "changing SECRET_KEY makes them unreadable and the two cannot be rotated apart",
        hint="set TRELLIS_SECRET_KEYS to a key made by Fernet.generate_key() (README: Secrets)",
        id="trellis.W001")]
