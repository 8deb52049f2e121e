from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from demo.data import ACCOUNTS, TEAM_NAME, load_demo


class Command(BaseCommand):
    help = (
        "Create the demo team, accounts (demo/demo, admin/admin, viewer/viewer) and workflows. "
        "Idempotent: existing rows are left as they are."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--force", action="store_true",
            help="also run when DEBUG is off (the demo accounts have well-known passwords)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["force"]:
            raise CommandError("refusing to create accounts with well-known passwords while DEBUG is off; "
                               "pass --force if this really is a demo site")
        report = load_demo()
        created = ", ".join(report.created_workflows) or "none"
        self.stdout.write(f"Demo team {TEAM_NAME!r}: new workflows: {created}; "
                          f"published: {', '.join(report.published) or 'none'}")
        if report.created_users:
            logins = ", ".join(f"{u}/{p}" for u, p, _, _ in ACCOUNTS if u in report.created_users)
            self.stdout.write(f"Demo accounts created (username/password): {logins}")
