"""A daemon thread that does one small piece of database work every few seconds while a block runs.

The lease heartbeat (``lease.Heartbeat``) and the cancel watch (``steps.CancelWatch``) both need the same
scaffolding: start with the ``with`` block, stop (and wait) when it ends, survive a transient database
error (logged, stale connections closed, tried again next time) and close the thread's own connection.

The thread is started only once the block has lasted one interval, by one shared ``_Starter`` thread: its
first tick is due then anyway, and most blocks (a one-step run, a short batch) end long before. Starting and
joining two threads per run cost a one-step run milliseconds of waiting for the scheduler on a busy machine
(issue 33), for ticks that never came.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from typing import Self

from django.db import close_old_connections, connection


class _Starter:
    """One daemon thread per process that starts each pending ``PeriodicThread`` when its first tick is due."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self._pending: list[tuple[float, int, PeriodicThread]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, periodic: PeriodicThread, due: float) -> None:
        with self.lock:
            heapq.heappush(self._pending, (due, next(self._order), periodic))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="periodic-starter", daemon=True)
                self._thread.start()
            if self._pending[0][2] is periodic:
                # Only a new earliest start moves the starter's wake-up: waking that thread for every block
                # would hand it the GIL, the very wait this saves.
                self.lock.notify()

    def _loop(self) -> None:
        with self.lock:
            while True:
                while self._pending and self._pending[0][2]._stop.is_set():
                    heapq.heappop(self._pending)  # its block ended before its first tick: nothing to start
                if not self._pending:
                    self.lock.wait()
                    continue
                due = self._pending[0][0]
                now = time.monotonic()
                if due > now:
                    self.lock.wait(due - now)
                    continue
                _, _, periodic = heapq.heappop(self._pending)
                # Under the lock: the block's end (``__exit__``) either comes before (nothing started) or sees
                # ``_started`` and joins the thread.
                periodic._started = True
                periodic._thread.start()


_starter = _Starter()


def _forget_starter_in_child() -> None:
    global _starter
    _starter = _Starter()  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_forget_starter_in_child)


class PeriodicThread:
    """Calls ``tick`` every ``interval`` seconds on a daemon thread named ``name`` while in a ``with`` block.

    ``tick`` returns True when the thread has nothing more to do. A ``tick`` that raises is logged as
    ``failure`` (a %-format given the run id) and tried again at the next interval. The thread itself starts
    when the first tick is due (see the module's docstring); leaving the block stops it and waits for it.
    """

    interval: float
    run_id: int
    #: What a failed tick logs (``%s``: the run id).
    failure = "run %s: periodic database work failed; retrying"

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._started = False

    def tick(self) -> bool:
        raise NotImplementedError

    def __enter__(self) -> Self:
        _starter.add(self, time.monotonic() + self.interval)
        return self

    def __exit__(self, *exc: object) -> None:
        starter = _starter
        with starter.lock:
            self._stop.set()
            started = self._started
        if started:
            self._thread.join()

    def _loop(self) -> None:
        try:
            # Started when the first tick was due: tick at once, then every interval.
            while not self._stop.is_set():
                try:
                    if self.tick():
                        return
                except Exception:  # a transient database error must not end the thread, but it must be seen
                    # Logged as the subclass's module, where the work is.
                    logging.getLogger(type(self).__module__).warning(self.failure, self.run_id, exc_info=True)
                    close_old_connections()
                if self._stop.wait(self.interval):
                    return
        finally:
            connection.close()
