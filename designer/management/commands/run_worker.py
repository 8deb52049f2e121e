"""``manage.py run_worker``: the task worker, ready for runs from its first second and fair across teams.

It accepts every option of django-tasks-db's ``db_worker`` and adds ``--slots``. Unlike ``db_worker``, which
runs one task at a time in the order they were queued, it runs ``--slots`` tasks at once (``TRELLIS_WORKER_SLOTS``)
and picks each fairly across teams and their workflows, within the teams' limits (``designer.runs.fair_worker``
and ``fairness``); a sweep thread recovers orphaned runs however busy the slots are. Before its first task it
forks the pool of step processes (``designer.runs.steps``) while no other thread exists, and recovers stale
runs and the recovery chain once. The plain ``db_worker`` still works the same queue, first come first served.
"""

from __future__ import annotations

import gc
import os
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from designer.conf import trellis
from designer.monitoring import worker as monitoring
from designer.runs import chain, steps
from designer.runs.fair_worker import FairWorker
from designer.runs.recovery import requeue_stale_runs
from designer.triggers.services import requeue_lost_ticks


class Command(DbWorkerCommand):
    help = "Run the task worker: several tasks at once, picked fairly across teams; recovers dead workers' runs."

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--slots", type=int, default=None,
                            help="tasks to run at once (default: the TRELLIS_WORKER_SLOTS setting)")

    def _start_up(self, slots: int) -> None:
        # The step processes' zygote is forked now, while this process has no other thread.
        pool = steps.shared_pool()
        pool.reserve = 1 if slots > 1 else 0
        requeued = requeue_stale_runs()
        if requeued:
            self.stdout.write(f"re-enqueued stale run(s): {', '.join(map(str, requeued))}")
        # A schedule whose queued tick was lost (an emptied queue) gets it back; a duplicate is harmless.
        lost = requeue_lost_ticks()
        if lost:
            self.stdout.write(f"re-enqueued the tick of schedule(s): {', '.join(map(str, lost))}")
        chain.ensure_chain()

    def handle(self, *args: Any, **options: Any) -> None:
        slots = options.pop("slots") or trellis.WORKER_SLOTS
        if slots < 1:
            raise CommandError(f"--slots must be at least 1, not {slots}")
        self.configure_logging(options["verbosity"])
        reload, batch = bool(options["reload"]), bool(options["batch"])
        reload = reload and not batch
        queue_names = options["queue_name"].split(",")
        excluded = options["exclude_queues"].split(",") if options["exclude_queues"] else []
        if excluded and "*" not in queue_names:
            raise CommandError("--exclude-queues can only be used with --queue-name=*")
        worker = FairWorker(slots=slots, queue_names=queue_names, interval=options["interval"], batch=batch,
                            backend_name=options["backend_name"], startup_delay=options["startup_delay"],
                            max_tasks=options["max_tasks"], worker_id=options["worker_id"],
                            excluded_queue_names=excluded)
        # With --reload the parent process only watches files; the child (marked by the env var) does the work.
        if not reload:
            self._start_up(slots)
            # What start-up built (Django, the catalogue, the runtime's models) lives as long as the process: out of
            # the cyclic collector's sight, its full collections no longer walk it. Each such collection cost ~75 ms
            # of a one-step burst's worker (two a burst), which was most of the PostgreSQL small runs' p95 (issue 33).
            gc.freeze()
            worker.configure_signals()
            with monitoring.watched(worker.worker_id):  # heartbeat row, metrics port (designer/monitoring/)
                worker.run()
        elif os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":
            self._start_up(slots)
            # What start-up built (Django, the catalogue, the runtime's models) lives as long as the process: out of
            # the cyclic collector's sight, its full collections no longer walk it. Each such collection cost ~75 ms
            # of a one-step burst's worker (two a burst), which was most of the PostgreSQL small runs' p95 (issue 33).
            gc.freeze()
            worker.configure_signals()
            with monitoring.watched(worker.worker_id):
                run_with_reloader(worker.run)
        else:
            run_with_reloader(worker.run)
