"""Production safety of the settings: debug and the public development key never reach a deployment.

Settings are read once per process, so each case imports them in a fresh interpreter with its own
environment (no DJANGO_* variable inherited from the test run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
REAL_KEY = "x7Kq2-real-deployment-key-0123456789-abcdefghijklmnop"

READ_SETTINGS = """
import json
from django.conf import settings
print(json.dumps({name: getattr(settings, name, None) for name in (
    "DEBUG", "ALLOWED_HOSTS", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "X_FRAME_OPTIONS",
    "SESSION_COOKIE_HTTPONLY")} | {"dev_key": settings.SECRET_KEY == settings.DEVELOPMENT_SECRET_KEY}))
"""


def load_settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    clean.update(env, DJANGO_SETTINGS_MODULE="designer.settings")
    return subprocess.run([sys.executable, "-c", READ_SETTINGS], cwd=ROOT, env=clean, capture_output=True,
                          text=True, timeout=60)


def settings_with(**env: str) -> dict[str, Any]:
    result = load_settings(**env)
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def test_a_fresh_clone_runs_in_debug_on_localhost_only() -> None:
    loaded = settings_with()
    assert loaded["DEBUG"] is True and loaded["dev_key"] is True
    assert loaded["ALLOWED_HOSTS"] == ["127.0.0.1", "localhost", "[::1]"]


def test_naming_a_real_host_turns_debug_off_and_demands_a_key() -> None:
    refused = load_settings(DJANGO_ALLOWED_HOSTS="trellis.example.com")
    assert refused.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in refused.stderr

    loaded = settings_with(DJANGO_ALLOWED_HOSTS="trellis.example.com", DJANGO_SECRET_KEY=REAL_KEY)
    assert loaded["DEBUG"] is False and loaded["dev_key"] is False
    assert loaded["ALLOWED_HOSTS"] == ["trellis.example.com"]
    assert loaded["SESSION_COOKIE_SECURE"] is True and loaded["CSRF_COOKIE_SECURE"] is True
    assert loaded["SESSION_COOKIE_HTTPONLY"] is True and loaded["X_FRAME_OPTIONS"] == "DENY"


def test_local_host_names_keep_debug() -> None:
    assert settings_with(DJANGO_ALLOWED_HOSTS="localhost,127.0.0.1,app.localhost")["DEBUG"] is True


@pytest.mark.parametrize(("key", "why"), [
    ("", "it is not set"),
    ("django-insecure-trellis-development-only", "it is a 'django-insecure-' key"),
    ("django-insecure-abc", "it is a 'django-insecure-' key"),
    ("short-but-random-Xq93", "it is 21 characters long; at least 50 are needed"),
    (REAL_KEY[:49], "it is 49 characters long; at least 50 are needed"),
    ("abcd" * 20, "it uses only 4 distinct characters; at least 5 are needed"),
])
def test_without_debug_insecure_keys_are_refused(key: str, why: str) -> None:
    refused = load_settings(DJANGO_DEBUG="false", DJANGO_SECRET_KEY=key)
    assert refused.returncode != 0
    assert "DJANGO_SECRET_KEY must be set to a private random value" in refused.stderr
    assert why in refused.stderr


def test_a_key_at_the_bar_is_accepted_and_debug_tolerates_a_short_one() -> None:
    assert len(REAL_KEY[:50]) == 50
    assert settings_with(DJANGO_DEBUG="false", DJANGO_SECRET_KEY=REAL_KEY[:50])["DEBUG"] is False
    assert settings_with(DJANGO_DEBUG="true", DJANGO_SECRET_KEY="short")["dev_key"] is False


def test_debug_can_still_be_forced_on_explicitly() -> None:
    assert settings_with(DJANGO_DEBUG="true", DJANGO_ALLOWED_HOSTS="dev.example.com")["DEBUG"] is True
