"""``manage.py run_worker``: django-tasks-db's ``db_worker`` that also recovers orphaned runs.

A worker that dies mid-run (killed, out of memory, machine lost) leaves its run
``running`` with a lease nobody renews. This command re-enqueues such runs once
at start-up, before the first task is taken (so ``--batch`` sees them), and
then every ``--recover-interval`` seconds from a daemon thread while the
worker runs, so a surviving worker picks up the runs of one that died. It
also starts the pool of step processes (``designer.runs.steps``) up front. All
``db_worker`` options are accepted unchanged.
"""

from __future__ import annotations

import logging
import os
import threading
from argparse import ArgumentParser
from typing import Any

from django.db import close_old_connections, connection
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from designer.runs import steps
from designer.runs.lease import lease_seconds
from designer.runs.recovery import requeue_stale_runs
from designer.services.triggers import requeue_lost_ticks

logger = logging.getLogger("designer.runs")


def _recover_forever(interval: float, stop: threading.Event) -> None:
    try:
        while not stop.wait(interval):
            try:
                requeue_stale_runs()
                requeue_lost_ticks()
            except Exception:  # a locked or briefly unavailable database must not end recovery for good
                logger.exception("recovering stale runs failed; retrying in %.1fs", interval)
                close_old_connections()
    finally:
        connection.close()


class Command(DbWorkerCommand):
    help = "Run the task worker; also re-enqueue runs whose worker died (stale lease)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--recover-interval",
            type=float,
            default=None,
            help="seconds between stale-run checks while the worker runs (default: half the run lease)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        reloading = bool(options.get("reload")) and not options.get("batch")
        # With --reload the parent process only watches files; the child (marked by the env var) does the work.
        if not reloading or os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":
            # The step processes' zygote is forked now, while this process has no other thread.
            steps.shared_pool()
            requeued = requeue_stale_runs()
            if requeued:
                self.stdout.write(f"re-enqueued stale run(s): {', '.join(map(str, requeued))}")
            # A schedule whose queued tick was lost (an emptied queue) gets it back; a duplicate is harmless.
            lost = requeue_lost_ticks()
            if lost:
                self.stdout.write(f"re-enqueued the tick of schedule(s): {', '.join(map(str, lost))}")
            if not options.get("batch"):
                interval = options.get("recover_interval") or max(lease_seconds() / 2, 0.5)
                stop = threading.Event()
                threading.Thread(
                    target=_recover_forever, args=(interval, stop), name="run-recovery", daemon=True
                ).start()
        options.pop("recover_interval", None)
        super().handle(*args, **options)
