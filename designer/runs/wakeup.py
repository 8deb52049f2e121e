"""Waking idle workers when work is queued, instead of leaving it until their next poll (issue 33).

A worker with nothing to do used to look at the queue once a second, so a one-step run that takes 8 ms waited
up to a second to start. Now every enqueue, once committed, ``announce``s it, and an idle ``run_worker`` slot
waits on a ``Waiter`` that returns as soon as it hears one (its poll interval stays as the fallback, for work
that becomes due later, like a backoff's ``run_after``, and for a lost announcement):

* PostgreSQL: ``NOTIFY trellis_work``; each worker process keeps one connection that ``LISTEN``s on a thread.
  Works across machines, as the database does.
* SQLite (one machine by nature): the announcement appends a byte to a file beside the database, and an idle
  worker looks at the file: a ``stat`` call, no query and no lock. First a millisecond after it found nothing
  to do, then at twice each pause up to ``FILE_POLL_SECONDS``: work tends to come in bursts, and a slot that
  has just caught up with one hears the next run of it within a millisecond or two, not half a poll (10 ms
  on average, 20 ms at worst: as long as a one-step run takes), for a few more ``stat`` calls. The file's size
  is the count of announcements, so each one moves it; its modification time alone did not: it moves in the
  kernel's timestamp ticks (several ms), and an announcement in the tick in which a slot armed went unheard
  until the slot's poll interval ran out.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from django.db import connection, transaction

logger = logging.getLogger("designer.runs")

CHANNEL = "trellis_work"
FILE_POLL_SECONDS = 0.02
#: The first pause of an idle slot's look at the wake file (SQLite), doubled at each look up to ``FILE_POLL_SECONDS``.
FILE_POLL_FIRST_SECONDS = 0.001
#: Bytes the wake file grows to before an announcer starts a new one (a new inode, so no mark can repeat).
WAKE_FILE_MAX_BYTES = 64 * 1024


def _wake_file() -> Path | None:
    name = str(connection.settings_dict.get("NAME") or "")
    if connection.vendor != "sqlite" or not name or name == ":memory:" or name.startswith("file:"):
        return None
    return Path(f"{name}.wake")


def _announce_now() -> None:
    try:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"NOTIFY {CHANNEL}")
            return
        path = _wake_file()
        if path is not None:
            _append_byte(path)
    except Exception:  # a lost announcement only costs the worker's poll interval
        logger.warning("could not announce queued work; workers will find it at their next poll", exc_info=True)


def _append_byte(path: Path) -> None:
    """One more announcement in the wake file: an appended byte (``O_APPEND`` writes of one byte never mix, so
    processes announcing at once each move the size). A full file is replaced by a fresh one through a rename:
    a slot whose mark was the old file's sees another inode, never the same size again."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(descriptor).st_size
        os.write(descriptor, b".")
    finally:
        os.close(descriptor)
    if size + 1 >= WAKE_FILE_MAX_BYTES:
        fresh = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
        fresh.write_bytes(b".")
        os.replace(fresh, path)


def announce() -> None:
    """Tell idle workers there is work, once the current transaction (which queued it) commits."""
    transaction.on_commit(_announce_now)


class Waiter:
    """What an idle worker slot waits on: ``wait(timeout)`` returns early when work is announced.

    A slot calls ``arm()`` before it looks at the queue: an announcement from then on (one it may have missed
    while it looked) ends its next ``wait`` at once. Each slot keeps its own mark, so one slot hearing an
    announcement never hides it from another: the others would sleep their whole poll interval with work
    queued.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        #: Announcements heard (PostgreSQL); a slot's mark is the count when it armed.
        self._heard = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._file = _wake_file()
        #: Each slot's (thread's) mark from its last ``arm``: the announcement count or the file's identity.
        self._armed: dict[int, object] = {}
        if connection.vendor == "postgresql":
            self._params: dict[str, Any] = connection.get_connection_params()
            self._thread = threading.Thread(target=self._listen, name="work-listener", daemon=True)
            self._thread.start()

    def _file_mark(self) -> tuple[int, int, int]:
        """The wake file's inode, size (announcements since it was made) and modification time; zeros when it
        does not exist yet."""
        if self._file is None:
            return (0, 0, 0)
        try:
            found = self._file.stat()
        except OSError:
            return (0, 0, 0)
        return (found.st_ino, found.st_size, found.st_mtime_ns)

    def _mark(self) -> object:
        return self._heard if self._thread is not None else self._file_mark()

    def _heard_one(self) -> None:
        with self._changed:
            self._heard += 1
            self._changed.notify_all()

    def _listen(self) -> None:
        params = {key: value for key, value in self._params.items() if key not in ("cursor_factory", "context")}
        while not self._stop.is_set():
            try:
                with psycopg.connect(**params, autocommit=True) as listener:
                    listener.execute(f"LISTEN {CHANNEL}")
                    self._heard_one()  # anything announced while (re)connecting: look once
                    while not self._stop.is_set():
                        for _ in listener.notifies(timeout=1.0, stop_after=1):
                            self._heard_one()
            except Exception:
                logger.warning("listening for queued work failed; polling until it reconnects", exc_info=True)
                self._stop.wait(1.0)

    def arm(self) -> None:
        """Mark now for this slot: the next ``wait`` returns at once if work was announced since."""
        self._armed[threading.get_ident()] = self._mark()

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds, less when work is announced meanwhile (or since this slot's ``arm``).
        True when an announcement ended the wait, False when the time ran out."""
        armed = self._armed.pop(threading.get_ident(), None)
        if armed is None:
            armed = self._mark()
        if self._thread is not None:
            with self._changed:
                return self._changed.wait_for(lambda: self._heard != armed, timeout)
        if self._file is None:
            time.sleep(timeout)
            return False
        deadline = time.monotonic() + timeout
        pause = FILE_POLL_FIRST_SECONDS
        while True:
            if self._file_mark() != armed:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(pause, left))
            pause = min(2 * pause, FILE_POLL_SECONDS)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
