"""SQLite waits for a lock in our backend (``designer.core.sqlite``), in attempts about a millisecond apart,
not in SQLite's busy handler, whose sleeps grow to 100 ms and lost the worker the lock to a busy API (issue 33).
Against a real second connection holding the database's write lock."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction
from django_tasks_db.utils import is_locked_database_exception

from designer.core.sqlite.base import DatabaseWrapper

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's write lock"),
]


@pytest.fixture
def table() -> Iterator[str]:
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE lock_probe (n INTEGER)")
    yield "lock_probe"
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE lock_probe")


def while_locked(write_lock_holder: sqlite3.Connection, work: Callable[[], Any]) -> Any:
    """``work()`` on a thread, started while ``write_lock_holder`` holds the write lock, which it lets go of only
    once the thread is under way; what ``work`` returned or raised."""
    write_lock_holder.execute("BEGIN IMMEDIATE")
    outcome: dict[str, Any] = {}
    started = threading.Event()

    def attempt() -> None:
        started.set()
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc
        finally:
            connection.close()  # the thread's own connection

    thread = threading.Thread(target=attempt)
    thread.start()
    started.wait()
    time.sleep(0.1)  # let it be refused at least once (it cannot finish before the commit either way)
    write_lock_holder.execute("COMMIT")
    thread.join(60)
    assert not thread.is_alive()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def test_sqlite_itself_does_not_wait_our_backend_does_for_the_configured_timeout() -> None:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] == 0
    assert connection.patience == connection.settings_dict["OPTIONS"]["timeout"] == 20


def test_a_transaction_begun_while_another_connection_writes_starts_once_it_commits(
        table: str, write_lock_holder: sqlite3.Connection) -> None:
    def write() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table} (n) VALUES (1)")

    while_locked(write_lock_holder, write)
    assert write_lock_holder.execute(f"SELECT n FROM {table}").fetchall() == [(1,)]


def test_a_statement_outside_a_transaction_waits_too_and_keeps_every_row_of_a_generator(
        table: str, write_lock_holder: sqlite3.Connection) -> None:
    def write() -> None:
        with connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {table} (n) VALUES (%s)", ((n,) for n in range(5)))

    while_locked(write_lock_holder, write)
    assert write_lock_holder.execute(f"SELECT n FROM {table} ORDER BY n").fetchall() == [(n,) for n in range(5)]


def test_a_wait_past_the_timeout_fails_as_a_locked_database(table: str, write_lock_holder: sqlite3.Connection) -> None:
    impatient = DatabaseWrapper({**connection.settings_dict,
                                 "OPTIONS": {**connection.settings_dict["OPTIONS"], "timeout": 0.05}}, "impatient")
    write_lock_holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(OperationalError) as refused, impatient.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table} (n) VALUES (1)")
        assert is_locked_database_exception(refused.value)  # what the worker's claim loop passes over quietly
    finally:
        write_lock_holder.execute("ROLLBACK")
        impatient.close()
    assert write_lock_holder.execute(f"SELECT n FROM {table}").fetchall() == []
