"""Two machines' worth of worker processes on one host, killed and frozen; every run finishes exactly once.

Four plain ``db_worker`` processes (the backend's own command, not ``run_worker``: recovery must not depend on
which command starts a worker) work a batch of runs with short leases. While they do:

* one worker is SIGKILLed while it holds a run (and a replacement starts, as a supervisor would start one);
* one is frozen with SIGSTOP while it holds a run;
* (PostgreSQL) one is frozen with SIGSTOP *inside the transaction that ends its run*, holding its run's row lock,
  which only the server can end (``idle_in_transaction_session_timeout``, shortened here). It is brought there
  on purpose (``freeze_in_run_transaction``), not caught there by chance: on a busy machine chance did not always
  come before the runs were done.

Each step waits for the condition it needs, never a time: a frozen worker counts as having lost its run only
once anything it had sent before it stopped has been done (``still_held_once_settled``), and the frozen workers,
let go, are stopped and waited for before the runs are compared again.

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

import psycopg
import pytest
from django.db import connection

from designer.models import Run, RunValue
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


def blocked_in_run_transaction(name: str) -> bool:
    """Whether a session of the worker named ``name`` waits for a lock inside a transaction that has written a
    run row (holding its row lock)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid "
            "WHERE a.application_name = %s AND a.state = 'active' AND a.wait_event_type = 'Lock' "
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


def stop_now(worker: subprocess.Popen[str], name: str) -> None:
    """SIGSTOP ``worker`` and wait until it has stopped: ``kill()`` returns before, and on another core it can
    still send a statement meanwhile."""
    os.kill(worker.pid, signal.SIGSTOP)
    wait_for(lambda: stopped(worker), message=f"{name} to stop", worker=worker)


def still_held_once_settled(worker: subprocess.Popen[str], run_id: int, attempts: int) -> bool:
    """Whether the stopped ``worker`` lost ``run_id`` with it, once whatever it sent before it stopped has been
    done: a COMMIT already on its way (of the run's end, say) is not done yet when the stop is seen, the more so
    on a busy machine. Waiting for the run's row lock waits for exactly that: a transaction the worker is in
    holds it until its COMMIT lands or the server ends the frozen session (its idle-in-transaction timeout).
    Then the run is the worker's still, or already taken over (recovered: one attempt more), not released.
    (SQLite is a library in the worker's process: stopped, it has nothing on its way.)"""
    if not POSTGRES:
        return True
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT lease_owner, attempts FROM {Run._meta.db_table} WHERE id = %s FOR UPDATE", [run_id])
        owner, now = cursor.fetchone()
    return f":{worker.pid}:" in owner or now > attempts


def freeze_worker(worker: subprocess.Popen[str], name: str, *, attempts: int = 2000) -> int:
    """SIGSTOP ``worker`` at a moment it holds a run, wherever it is in it (inside a transaction or not): stop it,
    look, and let it go on when it holds none. The run it stays frozen with."""
    wait_for(lambda: held_run(worker), message=f"{name} to hold a run", worker=worker)  # it has started up
    for _ in range(attempts):
        stop_now(worker, name)
        held = Run.objects.filter(lease_owner__contains=f":{worker.pid}:", status="running").values_list(
            "pk", "attempts").first()
        if held is not None and still_held_once_settled(worker, *held):
            return held[0]
        os.kill(worker.pid, signal.SIGCONT)
        time.sleep(0.005)
    raise AssertionError(f"{name} was never caught holding a run")


def sessions_of(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name])
        (count,) = cursor.fetchone()
    return int(count)


def freeze_in_run_transaction(worker: subprocess.Popen[str], name: str, url: str) -> int:
    """SIGSTOP ``worker`` inside the transaction that ends its run (the run's row written and locked, the rest of
    its end not yet), and leave it frozen there. A table that transaction writes after the run's row
    (``RunValue``, the output's values) is locked until the worker waits for it; the worker is stopped and the lock
    let go, so the server completes the statement and the session stays idle in that transaction. Workers ending
    a run meanwhile wait too, so none takes one more run while ``worker`` goes to the end of its own."""
    blocker = psycopg.connect(url)
    try:
        while True:
            wait_for(lambda: held_run(worker), message=f"{name} to hold a run", worker=worker)
            blocker.execute(f"LOCK TABLE {RunValue._meta.db_table} IN SHARE MODE")
            if held_run(worker) is not None:  # it can end that run only through the lock
                break
            blocker.rollback()  # it ended the run it held meanwhile: look again
        wait_for(lambda: blocked_in_run_transaction(name), message=f"{name} to end its run", worker=worker)
        stop_now(worker, name)
        run_id = held_run(worker)
        assert run_id is not None  # its transaction holds the run's row lock: nobody else changed the row
        blocker.rollback()
    finally:
        blocker.close()
    # Idle in the transaction; or already ended by the server for being so (a stopped worker's session ends no
    # other way), when this looks late on a busy machine.
    wait_for(lambda: in_run_transaction(name) or not sessions_of(name),
             message=f"{name} to be frozen inside its run's end")
    return run_id


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
    logs: dict[str, str] = {}
    try:
        runs = {start_run(client, workflow, {"x": n, "pause": 0.4})["id"]: n for n in range(RUNS)}

        # SIGKILL one worker in the middle of a run; a supervisor starts another in its place.
        victim = workers.pop("worker-0")
        orphans = [freeze_worker(victim, "worker-0")]
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        workers["worker-4"] = start_db_worker(environment, "worker-4")

        if freeze:
            # Freeze one worker while it holds a run (wherever it happens to be) ...
            frozen.append(workers["worker-1"])
            orphans.append(freeze_worker(workers["worker-1"], "worker-1"))
            # ... and another inside the transaction that ends its run (holding the row lock).
            frozen.append(workers["worker-2"])
            orphans.append(freeze_in_run_transaction(workers["worker-2"], "worker-2", env["DATABASE_URL"]))

        wait_for(lambda: Run.objects.filter(pk__in=runs, status="completed").count() == RUNS,
                 timeout=180, message="every run to complete")
        finished = {run_id: outcome(client, run_id) for run_id in runs}

        # Let the frozen workers go on: they find their leases taken and must write nothing more. Each is then
        # asked to stop (it ends the task it is in first): once it has exited, whatever it did has landed.
        for name, process in list(workers.items()):
            if process in frozen:
                os.kill(process.pid, signal.SIGCONT)
                logs[name] = stop_worker(workers.pop(name))
        assert {run_id: outcome(client, run_id) for run_id in runs} == finished
    finally:
        for process in frozen:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGCONT)
        logs.update({name: stop_worker(process) for name, process in workers.items()})

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
