"""Development settings (``make run``): production's settings plus the ``demo`` app (its tasks join the task
catalogue, ``manage.py load_demo`` creates the demo team, accounts and workflows)."""

from __future__ import annotations

from designer.settings import *  # noqa: F403
from designer.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "demo"]
