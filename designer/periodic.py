"""A daemon thread that does one small piece of database work every few seconds while a block runs.

The lease heartbeat (``lease.Heartbeat``) and the cancel watch (``steps.CancelWatch``) both need the same
scaffolding: start with the ``with`` block, stop (and wait) when it ends, survive a transient database
error (logged, stale connections closed, tried again next time) and close the thread's own connection.
"""

from __future__ import annotations

import logging
import threading
from typing import Self

from django.db import close_old_connections, connection


class PeriodicThread:
    """Calls ``tick`` every ``interval`` seconds on a daemon thread named ``name`` while in a ``with`` block.

    ``tick`` returns True when the thread has nothing more to do. A ``tick`` that raises is logged as
    ``failure`` (a %-format given the run id) and tried again at the next interval.
    """

    interval: float
    run_id: int
    #: What a failed tick logs (``%s``: the run id).
    failure = "run %s: periodic database work failed; retrying"

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def tick(self) -> bool:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    if self.tick():
                        return
                except Exception:  # a transient database error must not end the thread, but it must be seen
                    # Logged as the subclass's module, where the work is.
                    logging.getLogger(type(self).__module__).warning(self.failure, self.run_id, exc_info=True)
                    close_old_connections()
        finally:
            connection.close()
