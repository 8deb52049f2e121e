"""``manage.py serve [ADDR:PORT]``: the web application under gunicorn with ``designer/gunicorn_conf.py``.

``make run`` serves through this command, and so does the burst test, so the server a test measures is the one
people start. Gunicorn replaces this process (``exec``): signals (Ctrl-C, ``kill``) reach it directly.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

DEFAULT_ADDRESS = "127.0.0.1:8000"


class Command(BaseCommand):
    help = "Serve the web application with gunicorn (threaded workers, a deep listen backlog, WhiteNoise static)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("address", nargs="?", default=DEFAULT_ADDRESS,
                            help=f"HOST:PORT to listen on (default {DEFAULT_ADDRESS})")

    def handle(self, *args: Any, address: str, **options: Any) -> None:
        host, colon, port = address.rpartition(":")
        if not colon or not host or not port.isdigit():
            raise CommandError(f"{address!r} is not HOST:PORT, e.g. 127.0.0.1:8000")
        command = [sys.executable, "-m", "gunicorn", "--config", "python:designer.gunicorn_conf",
                   "--bind", address, "designer.wsgi:application"]
        sys.stdout.flush()
        os.execv(sys.executable, command)
