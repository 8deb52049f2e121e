"""Cursors whose statements PostgreSQL plans once per connection, for the few statements every run makes.

Planning was most of PostgreSQL's own time in a one-step run: 58% of 2.65 ms, the claim's queue read and the
lease's UPDATE each planned in about twice the time they ran (issue 33, ``bench.profile_pg_statements``). Django
sends every statement with its values spelled into the text (psycopg's client-side binding), so the server parses
and plans each one afresh; binding the values on the server for every statement was measured and rejected
(session 17: the ORM's statements vary too much in shape for the cache to pay). ``prepared_cursor`` binds on the
server and prepares only what is executed through it: statements written by hand, of a fixed shape, run at
every claim, save and end. Each is prepared on its first use on a connection and planned from then on by
PostgreSQL's plan cache (a generic plan once it proves as good as a custom one).

Django still wraps the cursor: its execute wrappers, its query log (the statement-count tests read it) and its
error translation see these statements as any other. Elsewhere than on PostgreSQL, and when
``TRELLIS_DB_PREPARED_STATEMENTS`` is off (a connection pooler in transaction mode that does not carry prepared
statements, such as PgBouncer before 1.21), it is Django's own cursor.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db import connection as default_connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.postgresql.base import CursorDebugWrapper
from django.db.backends.postgresql.psycopg_any import register_tzloader
from django.db.backends.utils import CursorWrapper
from psycopg.pq import Format

_TIMESTAMPTZ = psycopg.adapters.types["timestamptz"].oid



class _PreparingCursor(psycopg.Cursor[Any]):
    """psycopg's server-binding cursor that prepares what it executes (psycopg keeps the names per connection,
    dropping the least recently used past ``prepared_max``)."""

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = True,
                binary: bool | None = None) -> Any:
        return super().execute(query, params, prepare=prepare, binary=binary)


class _PreparedDebugCursor(CursorDebugWrapper):
    """Django's query log of a prepared statement, reading as its own cursors' does: the statement with its values
    written in. (Django reads that text from psycopg, which keeps none for a prepared statement.)"""

    @contextmanager
    def debug_sql(self, sql: Any = None, params: Any = None, use_last_executed_query: bool = False,
                  many: bool = False) -> Iterator[None]:
        if use_last_executed_query and not many and params is not None:
            sql, use_last_executed_query = self.db.ops.compose_sql(sql, params), False
        with super().debug_sql(sql, params, use_last_executed_query, many):
            yield


def preparing(connection: BaseDatabaseWrapper) -> bool:
    """Whether ``prepared_cursor`` prepares on ``connection``: PostgreSQL's, with a ``prepare_threshold`` in its
    options (settings.py sets one unless ``TRELLIS_DB_PREPARED_STATEMENTS`` is off; without one psycopg prepares
    nothing, whatever it is asked)."""
    return (connection.vendor == "postgresql"
            and connection.settings_dict["OPTIONS"].get("prepare_threshold") is not None)


def prepared_cursor(connection: BaseDatabaseWrapper = default_connection) -> CursorWrapper:
    """A cursor of ``connection`` whose statements are prepared (PostgreSQL; ``%s`` placeholders as ever). Only
    for statements of a fixed shape: each distinct text (and each distinct set of parameter types) is a
    statement the server keeps for the connection's life."""
    if not preparing(connection):
        return connection.cursor()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    assert connection.connection is not None
    cursor = _PreparingCursor(connection.connection)
    # As Django's own cursors: a connection opened in another time zone than the one now set reads in this one.
    if connection.timezone != connection.connection.adapters.get_loader(_TIMESTAMPTZ, Format.TEXT).timezone:
        register_tzloader(connection.timezone, cursor)
    if connection.queries_logged:
        return _PreparedDebugCursor(cursor, connection)
    return connection.make_cursor(cursor)
