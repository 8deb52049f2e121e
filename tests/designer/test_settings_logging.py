"""Log records reach the console once, in debug (``make run``) as in production.

Django's own logging config gives the ``django`` logger a console handler that prints only in debug; ours
gives the root logger one. Without ours taking that handler away, every ``django.*`` record (each task the
worker runs, the autoreloader, request warnings) printed twice under ``make run``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LOG_ONE_OF_EACH = """
import logging
import django
django.setup()
for name in ("django.tasks", "django.request", "django_tasks_db", "designer.runs"):
    logging.getLogger(name).warning("record from %s", name)
"""


@pytest.mark.parametrize("debug", ["true", "false"])
def test_each_record_is_printed_once(debug: str) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env.update(DJANGO_SETTINGS_MODULE="designer.settings", DJANGO_DEBUG=debug, LOG_LEVEL="INFO",
               DJANGO_SECRET_KEY="x7Kq2-real-deployment-key-0123456789-abcdefghijklmnop")
    done = subprocess.run([sys.executable, "-c", LOG_ONE_OF_EACH], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    printed = (done.stdout + done.stderr).splitlines()
    for name in ("django.tasks", "django.request", "django_tasks_db", "designer.runs"):
        assert printed.count(f"record from {name}") == 1, printed
