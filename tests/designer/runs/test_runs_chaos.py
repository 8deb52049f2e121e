"""Two machines' worth of worker processes on one host, killed and frozen; every run finishes exactly once.

Four plain ``db_worker`` processes (the backend's own command, not ``run_worker``: recovery must not depend on
which command starts a worker) work a batch of runs with short leases. While they do:

* one worker is SIGKILLed while it holds a run (and a replacement starts, as a supervisor would start one);
* one is frozen with SIGSTOP while it holds a run;
* (PostgreSQL) one is frozen with SIGSTOP *inside a transaction that holds its run's row lock*, which only the
  server can end (``idle_in_transaction_session_timeout``, shortened here).

Every run must complete with the output an undisturbed run gives, each step committed once in its trace; and
once the frozen workers are let go (SIGCONT) nothing they do may change any of that. SQLite has one write lock
for the whole file, so a worker frozen inside a transaction there stops every writer until it is resumed:
that case, and a freeze at a random point that may fall inside one, are PostgreSQL's alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from designer.models import Run
from designer.workflows import services as workflow_services
from tests.designer.runs_support import (
    REPO_ROOT,
    all_events,
    counting_document,
    run_detail,
    start_run,
    stop_worker,
    wait_for,
)

pytestmark = pytest.mark.django_db(transaction=True)

POSTGRES = connection.vendor == "postgresql"
RUNS = 12


def chaos_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "TRELLIS_RUN_LEASE_SECONDS": "2", "TRELLIS_RECOVERY_INTERVAL_SECONDS": "0.5",
            "TRELLIS_DB_IDLE_IN_TRANSACTION_SECONDS": "2"}


def start_db_worker(env: dict[str, str], name: str) -> subprocess.Popen[str]:
    """The backend's plain ``db_worker``; ``name`` is its PostgreSQL application_name (libpq's PGAPPNAME)."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "db_worker", "--no-startup-delay", "--no-reload", "--interval", "0.05"],
        cwd=REPO_ROOT, env={**env, "PGAPPNAME": name}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def held_run(worker: subprocess.Popen[str]) -> int | None:
    """A run this worker process holds the lease of right now (owner ids are host:pid:nonce)."""
    return Run.objects.filter(lease_owner__contains=f":{worker.pid}:", status="running").values_list(
        "pk", flat=True).first()


def in_run_transaction(name: str) -> bool:
    """Whether a session of the worker named ``name`` is inside a transaction that has written a run row (so
    holds its row lock) and is waiting on the worker: frozen there, it keeps the lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid "
            "WHERE a.application_name = %s AND a.state = 'idle in transaction' "
            "AND l.relation = %s::regclass AND l.mode = 'RowExclusiveLock' AND l.granted",
            [name, Run._meta.db_table])
        (count,) = cursor.fetchone()
    return bool(count)


def stopped(worker: subprocess.Popen[str]) -> bool:
    """Whether every thread of ``worker`` is stopped by a signal (state T in /proc)."""
    states = []
    for stat in Path(f"/proc/{worker.pid}/task").glob("*/stat"):
        try:
            states.append(stat.read_text().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):
            continue
    return bool(states) and all(state in {"T", "t", "Z", "X"} for state in states)


def freeze_worker(worker: subprocess.Popen[str], name: str, *, in_transaction: bool, attempts: int = 2000) -> int:
    """SIGSTOP ``worker`` at a moment it holds a run (and, with ``in_transaction``, is inside that run's save
    transaction): stop it, look, and let it go on when it is not there yet. The run it stays frozen with."""
    wait_for(lambda: held_run(worker), message=f"{name} to hold a run", worker=worker)  # it has started up
    for _ in range(attempts):
        os.kill(worker.pid, signal.SIGSTOP)
        # kill() returns before the process has stopped: on another core it can still commit its run's end.
        # Look only once every thread of it is stopped (and a COMMIT it had already sent has landed).
        wait_for(lambda: stopped(worker), message=f"{name} to stop", worker=worker)
        time.sleep(0.05)
        run_id = held_run(worker)
        if run_id is not None and (not in_transaction or in_run_transaction(name)):
            return run_id
        os.kill(worker.pid, signal.SIGCONT)
        time.sleep(0.005)
    raise AssertionError(f"{name} was never caught holding a run{' inside a transaction' * in_transaction}")


def outcome(client: Any, run_id: int) -> tuple[Any, list[tuple[Any, ...]]]:
    events = all_events(client, run_id)
    return run_detail(client, run_id)["output"], [(e["seq"], e["kind"], e["node_id"]) for e in events]


@pytest.mark.parametrize("freeze", [
    pytest.param(True, marks=pytest.mark.skipif(not POSTGRES, reason=(
        "SQLite has one write lock per file: a worker frozen inside a transaction stops every writer until it "
        "resumes, so freezing is PostgreSQL's case"))),
    False,
], ids=["kill-and-freeze", "kill"])
def test_runs_finish_exactly_once_while_workers_are_killed_and_frozen(api: Any, cast: Any, env: dict[str, str],
                                                                       freeze: bool) -> None:
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Counting",
                                                 document=counting_document(blocking=True))
    # The pause is a step that holds its worker (not the ``wait`` timer): a run must be caught inside a worker,
    # and a suspension would reset the attempt count this test reads.
    client = api(cast.editor)
    environment = chaos_env(env)
    workers = {f"worker-{n}": start_db_worker(environment, f"worker-{n}") for n in range(4)}
    frozen: list[subprocess.Popen[str]] = []
    try:
        runs = {start_run(client, workflow, {"x": n, "pause": 0.4})["id"]: n for n in range(RUNS)}

        # SIGKILL one worker in the middle of a run; a supervisor starts another in its place.
        victim = workers.pop("worker-0")
        orphans = [freeze_worker(victim, "worker-0", in_transaction=False)]
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        workers["worker-4"] = start_db_worker(environment, "worker-4")

        if freeze:
            # Freeze one worker while it holds a run (wherever it happens to be) ...
            frozen.append(workers["worker-1"])
            orphans.append(freeze_worker(workers["worker-1"], "worker-1", in_transaction=False))
            # ... and another inside the transaction that saves its run's checkpoint (holding the row lock).
            frozen.append(workers["worker-2"])
            orphans.append(freeze_worker(workers["worker-2"], "worker-2", in_transaction=True))

        wait_for(lambda: Run.objects.filter(pk__in=runs, status="completed").count() == RUNS,
                 timeout=180, message="every run to complete")
        finished = {run_id: outcome(client, run_id) for run_id in runs}

        # Let the frozen workers go on: they find their leases taken and must write nothing more.
        for process in frozen:
            os.kill(process.pid, signal.SIGCONT)
        time.sleep(3)  # more than a lease: any stray write would have landed by now
        assert {run_id: outcome(client, run_id) for run_id in runs} == finished
    finally:
        for process in frozen:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGCONT)
        logs = {name: stop_worker(process) for name, process in workers.items()}

    # Each run a worker was lost with was finished by another (recovered), not by the worker that held it.
    assert all(Run.objects.get(pk=run_id).attempts >= 2 for run_id in orphans), orphans
    for run_id, n in runs.items():
        detail = run_detail(client, run_id)
        assert detail["status"] == "completed", (detail["error"], logs)
        assert detail["output"] == {"first": n + 1, "second": 2 * (n + 1)}
        output, events = finished[run_id]
        assert [seq for seq, _, _ in events] == list(range(len(events)))
        kinds = [kind for _, kind, _ in events]
        assert kinds.count("run_started") == 1 and kinds.count("run_completed") == 1
        for node in ("first", "pause", "second"):
            completed = [e for e in events if e[1] == "node_completed" and e[2] == node]
            assert len(completed) == 1, (run_id, node, events)
