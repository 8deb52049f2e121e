from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from designer import conf


class Command(BaseCommand):
    help = ("Print the table of TRELLIS_* settings (designer/conf.py) as Markdown, for README.md's "
            "\"Configuration\" section (--write puts it there).")
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--write", action="store_true", help="replace the table in README.md")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["write"]:
            conf.write_readme_table()
            self.stdout.write(f"wrote the settings table into {conf.README}")
        else:
            self.stdout.write(conf.markdown_table(), ending="")
