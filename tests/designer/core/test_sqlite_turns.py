"""SQLite writers take turns on a file lock (``designer/core/sqlite``) rather than in SQLite's busy handler.

The writers are other processes on the test database, each with a busy timeout of zero: without the turn, a
write while another transaction holds the database fails at once with "database is locked"."""

from __future__ import annotations

import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.db import connection, transaction

from designer.core.sqlite import base as sqlite_base
from tests.conftest import REPO_ROOT
from tests.designer.runs_support import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

#: A writer in its own process: ``atomic`` or ``autocommit`` writes one row; ``hold`` writes one in a
#: transaction it keeps open until its standard input closes.
WRITER = """
import sys
import django

django.setup()
from django.db import connection, transaction

connection.ensure_connection()
connection.connection.execute("PRAGMA busy_timeout = 0")
mode = sys.argv[1]
if mode == "autocommit":
    connection.cursor().execute("INSERT INTO turn_probe VALUES (2)")
else:
    with transaction.atomic():
        connection.cursor().execute("INSERT INTO turn_probe VALUES (%s)", [1 if mode == "atomic" else 3])
        if mode == "hold":
            print("holding", flush=True)
            sys.stdin.read()
"""


@pytest.fixture
def probe() -> Path:
    if connection.vendor != "sqlite":
        pytest.skip("the writer's turn is SQLite's")
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS turn_probe (n integer)")
        cursor.execute("DELETE FROM turn_probe")
    return Path(f"{connection.settings_dict['NAME']}.writer")


def _writer(mode: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", WRITER, mode], cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _blocked_on(lock_file: Path, pid: int) -> bool:
    """Whether ``pid`` waits for a lock on ``lock_file`` (the kernel lists waiters with ``->``)."""
    inode = f":{lock_file.stat().st_ino} "
    return any("->" in line and f" {pid} " in line and inode in line
               for line in Path("/proc/locks").read_text().splitlines())


def _rows() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT n FROM turn_probe ORDER BY n")
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize(("mode", "row"), [("atomic", 1), ("autocommit", 2)])
def test_a_writer_waits_for_its_turn_instead_of_failing_on_the_busy_timeout(
        probe: Path, worker_env: dict[str, str], mode: str, row: int) -> None:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO turn_probe VALUES (0)")
        writer = _writer(mode, worker_env)
        try:
            wait_for(lambda: writer.poll() is not None or _blocked_on(probe, writer.pid),
                     message="the writer to queue for its turn")
            assert writer.poll() is None, writer.communicate()[0]  # it queued, it did not fail
        except BaseException:
            writer.kill()
            raise
    output, _ = writer.communicate(timeout=60)
    assert writer.returncode == 0, output
    assert _rows() == [0, row]


def test_a_killed_holder_leaves_the_turn_free(probe: Path, worker_env: dict[str, str]) -> None:
    holder = _writer("hold", worker_env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        descriptor = os.open(probe, os.O_RDWR)
        try:
            with pytest.raises(OSError):
                fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held, by the live holder
            holder.send_signal(signal.SIGKILL)
            holder.wait(60)
            fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the kernel dropped the dead holder's lock
            fcntl.lockf(descriptor, fcntl.LOCK_UN)
        finally:
            os.close(descriptor)
    finally:
        holder.kill()
        holder.communicate()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("INSERT INTO turn_probe VALUES (4)")
    assert _rows() == [4]  # the killed holder's row was never committed


def test_threads_of_one_process_take_turns_and_give_up_after_the_timeout(probe: Path) -> None:
    turn = sqlite_base.turn_for(str(connection.settings_dict["NAME"]))
    outcome: list[str] = []

    def other_thread() -> None:
        try:
            turn.take(0.01)
        except sqlite3.OperationalError as exc:
            outcome.append(str(exc))
        else:
            turn.give()
            outcome.append("took it")

    turn.take(5)
    try:
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join(60)
    finally:
        turn.give()
    assert outcome == ["database is locked"]
    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(60)
    assert outcome == ["database is locked", "took it"]
