"""Django's SQLite backend, except that a statement refused because another connection holds the lock is tried
again after a short, jittered sleep of ours, up to the ``timeout`` option, instead of SQLite's busy handler's.

SQLite's handler sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100 ms... between attempts. A process that
takes the write lock again right after it lets it go (the API creating runs back to back) then keeps it from
one that has waited a while (the worker claiming, checkpointing and ending those runs): the waiter sleeps
through every short gap and 50 one-step runs took 0.4-0.7 s each from creation to end (issue 33). Attempts a
millisecond apart see every gap of a millisecond or more. The connection's own busy timeout is 0 once it is
open, so SQLite answers "busy" at once and this backend does the waiting: at ``BEGIN IMMEDIATE`` (each
``atomic`` block takes the write lock there), at a statement outside a transaction (Django's autocommit
writes), and at ``COMMIT``. A wait that runs out raises SQLite's own "database is locked", as before.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from django.db.backends.sqlite3 import base
from django.db.backends.utils import debug_transaction

#: How long a refused attempt waits before the next one, at random between the two (s): near a millisecond, so
#: a waiter sees each gap between another's transactions, and jittered, so two waiters do not keep colliding.
RETRY_SLEEP = (0.0005, 0.0015)
#: SQLite's extended codes for "another connection holds a lock we need": waiting helps. Not SQLITE_BUSY_SNAPSHOT
#: (a read transaction's view went stale; only a new transaction helps), which SQLite's handler does not wait on
#: either.
BUSY_CODES = frozenset({5, 261})  # SQLITE_BUSY, SQLITE_BUSY_RECOVERY


def is_busy(exc: sqlite3.OperationalError) -> bool:
    return getattr(exc, "sqlite_errorcode", None) in BUSY_CODES


def waiting(attempt: Callable[[], Any], patience: float) -> Any:
    """``attempt()``, tried again while SQLite answers busy, until ``patience`` seconds have gone by."""
    deadline = None
    while True:
        try:
            return attempt()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            now = time.monotonic()
            if deadline is None:
                deadline = now + patience
            if now >= deadline:
                raise
            time.sleep(min(random.uniform(*RETRY_SLEEP), deadline - now))


class PatientCursor(base.SQLiteCursorWrapper):
    """Django's cursor, waiting out a busy database itself (``waiting``)."""

    patience: float = 5.0

    def execute(self, query: str, params: Any = None) -> Any:
        return waiting(lambda: super(PatientCursor, self).execute(query, params), self.patience)

    def executemany(self, query: str, param_list: Any) -> Any:
        rows = list(param_list)  # an attempt that was refused must not have used up a generator
        return waiting(lambda: super(PatientCursor, self).executemany(query, rows), self.patience)


class DatabaseWrapper(base.DatabaseWrapper):
    #: ``OPTIONS["timeout"]``: how long a statement waits for a lock before it fails, as with SQLite's handler.
    patience = 5.0

    def get_connection_params(self) -> dict[str, Any]:
        params: dict[str, Any] = super().get_connection_params()
        self.patience = float(params.get("timeout", self.patience))
        return params

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        # Opened (and the init commands run) under SQLite's handler; from here on, this backend waits.
        connection = super().get_new_connection(conn_params)
        connection.execute("PRAGMA busy_timeout = 0")
        return connection

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = self.connection.cursor(factory=PatientCursor)
        cursor.patience = self.patience
        return cursor

    def _commit(self) -> Any:
        # In WAL mode a COMMIT holds the write lock already; in rollback-journal mode it may wait for readers.
        if self.connection is not None:
            with debug_transaction(self, "COMMIT"), self.wrap_database_errors:
                return waiting(self.connection.commit, self.patience)
