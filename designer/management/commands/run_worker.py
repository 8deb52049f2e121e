"""``manage.py run_worker``: django-tasks-db's ``db_worker``, ready for runs from its first second.

Recovery of orphaned runs does not depend on this command: it is a task chain that any worker of the queue
runs (``designer.runs.sweep``), the backend's plain ``db_worker`` included. This command adds two things
that make a (re)started worker quicker: it forks the pool of step processes (``designer.runs.steps``) before
any thread exists, and it recovers stale runs and checks the recovery chain once at start-up, before the
first task is taken (so ``--batch`` sees them). All ``db_worker`` options are accepted unchanged.
"""

from __future__ import annotations

import os
from typing import Any

from django.utils.autoreload import DJANGO_AUTORELOAD_ENV
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from designer.runs import steps, sweep
from designer.runs.recovery import requeue_stale_runs
from designer.triggers.services import requeue_lost_ticks


class Command(DbWorkerCommand):
    help = "Run the task worker; recover runs whose worker died at once when it starts."

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
            sweep.ensure_chain()
        super().handle(*args, **options)
