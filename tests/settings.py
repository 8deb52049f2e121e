"""Test settings: production's settings plus the ``demo`` app, whose tasks and workflows many tests use.

Worker subprocesses that tests start get this module too (``worker_env`` in tests/conftest.py)."""

from __future__ import annotations

from designer.settings import *  # noqa: F403
from designer.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "demo"]
