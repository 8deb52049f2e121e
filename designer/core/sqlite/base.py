"""Django's SQLite backend, with writers taking turns on a file lock instead of retrying on SQLite's busy handler.

SQLite lets one writer at a time in; the others wait in its busy handler, which sleeps and looks again with
growing sleeps (up to 100 ms each). So the writer that just committed, already on the CPU, usually starts its
next transaction before a sleeping one looks: while the API created a burst of runs, a worker's claims lost
round after round and runs waited in the queue for a second and more (issue 33). Here every write transaction
(``BEGIN IMMEDIATE``/``EXCLUSIVE``, and a write statement outside a transaction) first takes the writer's turn:

* across processes a POSIX record lock (``lockf``) on a file beside the database (``<name>.writer``), taken
  blocking: a waiter sleeps in the kernel and is woken by the release itself, not by its next look. The kernel
  drops the lock of a process that dies, so a killed holder never keeps it.
* inside a process (POSIX locks belong to the process, so its threads do not exclude each other through it), a
  ``threading.Lock`` per database, waited on for the connection's ``timeout`` like SQLite's own lock.

SQLite's lock still decides: a writer that bypasses the turn (another program, a transaction begun implicitly
outside ``atomic``) only falls back on the busy handler, as before. Readers take no turn (WAL).
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db.backends.sqlite3 import base

#: Statements that write, when they begin a statement run outside a transaction.
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


class WriterTurn:
    """The turn to write to one database file, for this process."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._threads = threading.Lock()
        self._descriptor: int | None = None

    def take(self, timeout: float) -> None:
        """Wait for the turn: other threads of this process for up to ``timeout`` seconds (then "database is
        locked", as SQLite says), then other processes for as long as their write lasts."""
        if not self._threads.acquire(timeout=timeout):
            raise sqlite3.OperationalError("database is locked")
        try:
            if self._descriptor is None:
                # One descriptor for the process's life: closing any descriptor of the file would drop the lock.
                self._descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.lockf(self._descriptor, fcntl.LOCK_EX)
        except BaseException:
            self._threads.release()
            raise

    def give(self) -> None:
        try:
            if self._descriptor is not None:
                fcntl.lockf(self._descriptor, fcntl.LOCK_UN)
        finally:
            self._threads.release()


_turns: dict[str, WriterTurn] = {}
_turns_guard = threading.Lock()


def turn_for(path: str) -> WriterTurn:
    """This process's turn for the database at ``path``."""
    with _turns_guard:
        turn = _turns.get(path)
        if turn is None:
            turn = _turns[path] = WriterTurn(f"{path}.writer")
        return turn


def _forget_turns() -> None:
    """In a forked child: POSIX locks are not inherited, and a thread lock copied while held would never be
    released there, so the child starts with turns of its own."""
    global _turns_guard
    _turns.clear()
    _turns_guard = threading.Lock()


os.register_at_fork(after_in_child=_forget_turns)


def writes(query: str) -> bool:
    return query.lstrip()[:8].upper().startswith(WRITES)


class TurnCursorWrapper(base.SQLiteCursorWrapper):
    """Takes the writer's turn around a write statement that runs outside a transaction (SQLite makes it a
    transaction of its own). ``wrapper`` is set right after the cursor is made."""

    wrapper: DatabaseWrapper

    def execute(self, query: str, params: Any = None) -> Any:
        if self.connection.in_transaction or not writes(query):
            return super().execute(query, params)
        with self.wrapper.writer_turn():
            return super().execute(query, params)

    def executemany(self, query: str, param_list: Any) -> Any:
        if self.connection.in_transaction or not writes(query):
            return super().executemany(query, param_list)
        with self.wrapper.writer_turn():
            return super().executemany(query, param_list)


class DatabaseWrapper(base.DatabaseWrapper):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._turn_held: WriterTurn | None = None

    def _turn(self) -> WriterTurn | None:
        name = str(self.settings_dict.get("NAME") or "")
        if not name or name.startswith("file:") or self.is_in_memory_db():
            return None  # one connection's database: nobody to take turns with
        return turn_for(name)

    def _take_turn(self) -> None:
        turn = self._turn()
        if turn is None or self._turn_held is not None:
            return
        with self.wrap_database_errors:  # "database is locked" as Django's OperationalError, as SQLite's would be
            turn.take(float(self.settings_dict.get("OPTIONS", {}).get("timeout", 5)))
        self._turn_held = turn

    def _give_turn(self) -> None:
        turn, self._turn_held = self._turn_held, None
        if turn is not None:
            turn.give()

    @contextmanager
    def writer_turn(self) -> Iterator[None]:
        """Hold the writer's turn for the block (a no-op when this connection already holds it)."""
        if self._turn_held is not None:
            yield
            return
        self._take_turn()
        try:
            yield
        finally:
            self._give_turn()

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = self.connection.cursor(factory=TurnCursorWrapper)
        cursor.wrapper = self
        return cursor

    def _start_transaction_under_autocommit(self) -> None:
        # Every atomic block begins here (IMMEDIATE, or EXCLUSIVE for the queue's claims): it writes or may.
        self._take_turn()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._give_turn()
            raise

    def _commit(self) -> None:
        try:
            super()._commit()
        finally:
            self._give_turn()

    def _rollback(self) -> None:
        try:
            super()._rollback()
        finally:
            self._give_turn()

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self._give_turn()
