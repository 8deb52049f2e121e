"""``run_worker``'s loop: several slots per process, each taking the next task fairly (``designer.runs.fairness``).

django-tasks-db's worker runs one task at a time in first-come order, so one team's long foreach held a worker
for minutes while another team's one-step run waited. Here a process runs ``slots`` tasks at once, on threads
(a task mostly waits: for its step processes, which do the work, and for the database), each slot claiming
through ``fairness.claim_next``; the step processes are shared, and a run that holds some of them leaves the
last one free for another slot's run (``steps.StepProcessPool.reserve``).

Alongside the slots, a ``RecoverySweep`` thread re-enqueues orphaned runs every sweep interval: the queued
recovery chain (``designer.runs.sweep``) waits for a free slot like any task, this does not. It also keeps that
chain alive (``chain.ensure_chain``), which the runs this worker takes no longer ask about one by one.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
from collections import Counter
from types import FrameType
from typing import Any

from django.core.exceptions import SuspiciousOperation
from django.db import close_old_connections, connection
from django.db.utils import OperationalError
from django.tasks import TaskContext
from django.tasks.signals import task_finished, task_started
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult
from django_tasks_db.utils import is_locked_database_exception

from designer.core.periodic import PeriodicThread
from designer.models import RecoveryChain
from designer.monitoring import metrics
from designer.runs import chain, executor, fairness, signals, task_backend, wakeup
from designer.runs.recovery import requeue_stale_runs

logger = logging.getLogger("designer.runs")
#: The queue's own logger, which ``db_worker``'s options (``-v``) configure: worker start and stop go there.
worker_logger = logging.getLogger("django_tasks_db")
#: How often a busy slot checks its database connection (``close_old_connections``): age, errors, health.
CONNECTION_CHECK_SECONDS = 1.0


class RecoverySweep(PeriodicThread):
    """Re-enqueues runs whose worker died and lost schedule ticks every sweep interval, whatever the slots do."""

    failure = "recovery sweep %s failed; retrying"

    def __init__(self, worker_id: str) -> None:
        super().__init__(f"recovery-sweep-{worker_id}")
        self.run_id = 0
        self.interval = chain.interval()

    def tick(self) -> bool:
        chain.ensure_chain()  # for the runs this worker takes, whose ``execute_run`` no longer asks (tasks.py)
        requeued = requeue_stale_runs()
        if requeued:
            logger.info("re-enqueued stale run(s): %s", ", ".join(map(str, requeued)))
        signals.recovery_swept.send(sender=RecoveryChain)  # e.g. lost schedule ticks
        return False


class FairWorker(Worker):
    """A db_worker whose ``slots`` threads each claim and run tasks, fairly across teams."""

    def __init__(self, *, slots: int, **options: Any) -> None:
        super().__init__(**options)
        self.slots = slots
        self._claiming = threading.Lock()
        self._busy = 0
        self._teams: Counter[int] = Counter()
        #: What db_worker's own ``DBTaskResult.objects.ready()`` filter says, once (its SQL is built once too).
        self._ready = fairness.ReadyTasks(
            backend_name=self.backend_name,
            queue_names=None if self.process_all_queues else tuple(self.queue_names),
            excluded=tuple(self.excluded_queue_names),
            using=DBTaskResult.objects.db)

    def _claim(self) -> tuple[fairness.Claimed | None, bool]:
        """The task this slot runs next (reserved in the slot count) and whether the queue could be read."""
        with self._claiming:  # one slot claims at a time, so each sees the others' reservations
            try:
                free = self.slots - self._busy
                if fairness.held_back(self._ready, worker_teams=self._teams, free_slots=free, slots=self.slots):
                    return None, True
                # A run's lease is taken with its task: one transaction per run fewer (executor.claim_ahead).
                claimed = fairness.claim_next(self._ready, worker_id=self.worker_id, worker_teams=self._teams,
                                              free_slots=free, slots=self.slots, prepare=executor.claim_ahead)
            except OperationalError as exc:
                if not is_locked_database_exception(exc):
                    logger.exception("worker %s: claiming a task failed; trying again", self.worker_id)
                    close_old_connections()
                return None, False
            except Exception:  # a slot that died here would leave the worker running with fewer slots, silently
                logger.exception("worker %s: claiming a task failed; trying again", self.worker_id)
                return None, False
            if claimed is not None:
                self._busy += 1
                if claimed.team_id is not None:
                    self._teams[claimed.team_id] += 1
            return claimed, True

    def _release(self, claimed: fairness.Claimed) -> None:
        with self._claiming:
            self._busy -= 1
            if claimed.team_id is not None:
                self._teams[claimed.team_id] -= 1

    def run_task(self, db_task_result: DBTaskResult) -> None:
        """Run one task and record how it ended, as db_worker's ``run_task`` does, except that a task may record
        its own success in its last transaction (``task_backend.succeed``: a run's end and its task's are then
        one commit, issue 33); only a task that did not is marked SUCCESSFUL here."""
        try:
            self.running_task = True
            task = db_task_result.task
            task_result = db_task_result.task_result
            backend = task.get_backend()  # the sender, as db_worker sends it (the type, once the task failed)
            task_started.send(sender=backend, task_result=task_result)
            with task_backend.running(db_task_result) as current:
                if task.takes_context:
                    value = task.call(TaskContext(task_result=task_result), *task_result.args, **task_result.kwargs)
                else:
                    value = task.call(*task_result.args, **task_result.kwargs)
            if not current.done:
                db_task_result.set_successful(value)  # inside the error handling: a value it cannot store fails
            task_finished.send(sender=backend, task_result=db_task_result.task_result)
        except BaseException as exc:
            db_task_result.set_failed(exc)
            try:
                backend_type = type(db_task_result.task.get_backend())
                task_result = db_task_result.task_result
            except (ImportError, SuspiciousOperation):
                logger.exception("task %s failed unexpectedly", db_task_result.id)
            else:
                task_finished.send(sender=backend_type, task_result=task_result)
        finally:
            self.running_task = False
            self._run_tasks += 1

    def _slot(self) -> None:
        checked = -CONNECTION_CHECK_SECONDS
        try:
            while self.running:
                # What db_worker does around each task, at most once a CONNECTION_CHECK_SECONDS while busy (or after
                # an error): each check made the next statement a health check, a round trip on PostgreSQL, and a
                # one-step run is some twenty of them (issue 33).
                if time.monotonic() - checked >= CONNECTION_CHECK_SECONDS or connection.errors_occurred:
                    close_old_connections()
                    checked = time.monotonic()
                self._waiter.arm()  # work announced while this slot looks at the queue is not slept through
                claimed, read = self._claim()
                if claimed is not None:
                    try:
                        with executor.ahead(claimed.prepared):
                            self.run_task(claimed.task)
                    finally:
                        self._release(claimed)
                if self.batch and read and claimed is None:
                    return
                if self.max_tasks is not None and self._run_tasks >= self.max_tasks:
                    self.running = False
                    return
                if self.running and claimed is None:
                    close_old_connections()
                    self._idle()
                    checked = time.monotonic()
        finally:
            connection.close()

    def _idle(self) -> None:
        """Wait for announced work or the poll interval, and count which ended the wait (the worker's metrics)."""
        metrics.SLOTS_WAITING.inc()
        try:
            woken = self._waiter.wait(self.interval)
        finally:
            metrics.SLOTS_WAITING.dec()
        metrics.WAKEUPS.labels("announced" if woken else "poll").inc()

    def run(self) -> None:
        worker_logger.info("Starting worker worker_id=%s slots=%d queues=%s", self.worker_id, self.slots,
                    ",".join(self.queue_names))
        slots = [threading.Thread(target=self._slot, name=f"slot-{number}", daemon=True)
                 for number in range(self.slots)]
        self._waiter = wakeup.Waiter()
        with RecoverySweep(self.worker_id), contextlib.closing(self._waiter):
            for thread in slots:
                thread.start()
            while any(thread.is_alive() for thread in slots):
                for thread in slots:
                    thread.join(0.2)  # short joins: the main thread stays free to take a signal

    def shutdown(self, signum: int, frame: FrameType | None) -> None:
        if not self.running:
            worker_logger.warning("Received %s again - stopping now, abandoning running tasks.",
                                  signal.strsignal(signum))
            self.reset_signals()
            sys.exit(1)
        worker_logger.warning("Received %s - finishing running tasks (press Ctrl+C again to stop now)",
                       signal.strsignal(signum))
        self.running = False
        if not self._busy:
            sys.exit(0)
