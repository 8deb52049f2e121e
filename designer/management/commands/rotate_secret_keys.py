"""``manage.py rotate_secret_keys``: re-encrypt every team secret with the first key of ``TRELLIS_SECRET_KEYS``.

Rotation: put a new key first (keep the old ones after it), restart, run this, then drop the old keys."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from designer.secrets.services import rotate_keys


class Command(BaseCommand):
    help = "Re-encrypt every team secret with the first key of TRELLIS_SECRET_KEYS."

    def handle(self, *args: Any, **options: Any) -> None:
        count = rotate_keys()
        self.stdout.write(f"re-encrypted {count} secret{'s' if count != 1 else ''} with the first key")
