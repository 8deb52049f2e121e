"""Durability modes of the runtime's checkpointers, and the group-commit writer behind ``"batched"``.

An fsync costs milliseconds on a real (or shared, virtual) disk, far more
than a superstep of small tasks. ``"sync"`` pays one per superstep and waits
for it; ``"batched"`` hands each superstep's checkpoint, already encoded, to
one background writer per checkpointer, which writes every checkpoint that
is waiting when it comes round in one transaction (one append per run for
the file log) and syncs once: successive checkpoints coalesce into one fsync
while the engine computes the next supersteps.

The guarantees (``DURABILITY``):

``"sync"``
    a superstep's checkpoint is on disk (fsynced) before ``save`` returns,
    so before the next superstep starts.
``"batched"``
    ``save`` returns once the checkpoint is encoded (a snapshot: the engine
    may go on mutating the state). At most ``max_pending`` checkpoints are
    not yet durable at any time (``save`` waits when the writer is that far
    behind). A save whose state is not ``running`` (the run completed,
    failed, was cancelled, paused at an interrupt or waits) is synchronous:
    it returns once it and everything before it is on disk, so a finished
    ``Engine.run``/``resume`` call has always left a durable checkpoint, and
    so do ``flush()``, ``close()`` and every read (``load``,
    ``load_events``, ``history``, ``load_at``). After a crash (a killed
    process or a power cut) the run resumes from its last durable
    checkpoint: at most the ``max_pending`` supersteps in flight run again
    (at-least-once, as a superstep interrupted by a crash always did).
    Nothing a finished call returned is ever lost, and nothing reported
    done either: the engine's ``on_superstep`` hook (what tells the world a
    superstep is done) is called only once that superstep is on disk (the
    loop waits for the writer first, so with a hook saves coalesce only as
    far as the hook lets them). The trace sink is a live feed, as in
    ``"sync"``: it sees events as they are made, before their superstep is
    saved, and a superstep replayed after a crash reaches it again (as one
    interrupted by a crash always did). So every superstep is still
    checkpointed, in order; a crash re-runs at most the supersteps no one
    was told of.
``"off"``
    written before ``save`` returns, never fsynced: survives a killed
    process, not a power cut.

``GroupCommitStore`` is the part both stores share (the mode, the writer,
the part ledgers, ``flush``/``close``/``in_flight``): each store gives only
its ``write(records)``, which commits records in order as one unit.

A write that fails in the background (a full disk) is raised as
``CheckpointWriteError`` by every later ``save``, ``flush`` and read of that
checkpointer: what was queued behind it is lost, so the checkpointer stops
there. Open a new one to resume from what is on disk.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Self, get_args

from runtime._errors import CheckpointWriteError
from runtime._parts import CheckpointDelta, PartLedger

if TYPE_CHECKING:
    from runtime._state import RunState

Durability = Literal["sync", "batched", "off"]
DURABILITY: tuple[str, ...] = get_args(Durability)

#: The default bound of checkpoints in flight with ``"batched"``.
MAX_PENDING = 64

#: ``fdatasync`` where the platform has it: an appended record needs its data and the file size on disk, not
#: its modification time.
sync_file: Callable[[int], None] = getattr(os, "fdatasync", os.fsync)

def durability_of(durability: str | None, durable: bool) -> Durability:
    """The mode a checkpointer runs in: ``durability`` when given, else ``durable`` (True: ``"sync"``)."""
    if durability is None:
        return "sync" if durable else "off"
    if durability not in DURABILITY:
        raise ValueError(f"durability {durability!r}: use one of {', '.join(map(repr, DURABILITY))}")
    return durability  # type: ignore[return-value]  # checked against the Literal's values just above


class GroupCommit[T]:
    """One background thread that writes queued records in batches: ``write(batch)`` once per batch.

    ``write`` must make the whole batch durable (one transaction, one
    fsync) or raise; it runs in the writer thread only, one batch at a time,
    in submission order.
    """

    def __init__(self, write: Callable[[list[T]], None], *, max_pending: int = MAX_PENDING,
                 name: str = "trellis-checkpoint-writer") -> None:
        if isinstance(max_pending, bool) or not isinstance(max_pending, int) or max_pending < 1:
            raise ValueError(f"max_pending is a positive number of checkpoints, not {max_pending!r}")
        self._write = write
        self.max_pending = max_pending
        self._name = name
        self._cond = threading.Condition()
        self._queue: list[T] = []
        self._submitted = 0
        self._durable = 0
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        #: Batches written and records in them: how well saves coalesced.
        self.batches = 0
        self.records = 0
        _open_writers.add(self)

    def submit(self, record: T, *, wait: bool = False) -> None:
        """Queue ``record``; with ``wait``, return once it (and all before it) is durable."""
        with self._cond:
            self._raise_error()
            while self._submitted - self._durable >= self.max_pending:
                self._cond.wait()
                self._raise_error()
            self._queue.append(record)
            self._submitted += 1
            ticket = self._submitted
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()
            if wait:
                self._wait_for(ticket)

    def flush(self) -> None:
        """Return once every record submitted so far is durable (raises a background write's error)."""
        with self._cond:
            self._wait_for(self._submitted)

    def in_flight(self) -> int:
        """Records submitted and not yet durable."""
        with self._cond:
            return self._submitted - self._durable

    def close(self) -> None:
        """Flush, then stop the writer thread."""
        try:
            self.flush()
        finally:
            with self._cond:
                self._closing = True
                self._cond.notify_all()
                thread = self._thread
            if thread is not None and thread is not threading.current_thread():
                thread.join()
            _open_writers.discard(self)

    def _wait_for(self, ticket: int) -> None:
        while self._durable < ticket:
            self._raise_error()
            self._cond.wait()
        self._raise_error()

    def _raise_error(self) -> None:
        error = self._error
        if error is not None:
            raise CheckpointWriteError(f"a checkpoint written in the background failed: {error}",
                                       reason=type(error).__name__) from error

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    self._thread = None
                    return
                batch, self._queue = self._queue, []
            try:
                self._write(batch)
            except BaseException as exc:  # noqa: BLE001 - handed to the next caller, never lost
                with self._cond:
                    self._error = exc
                    # Callers must not wait forever for what is lost: the error (sticky) tells them.
                    self._durable = self._submitted
                    self._queue = []
                    self._thread = None
                    self._cond.notify_all()
                return
            with self._cond:
                self._durable += len(batch)
                self.batches += 1
                self.records += len(batch)
                self._cond.notify_all()


class GroupCommitStore[R]:
    """What a checkpointer that writes through a ``durability`` mode shares: the store gives only ``write``.

    ``write(records)`` commits records in order, as one unit (one
    transaction, one sync when durable), or raises. ``"sync"`` and ``"off"``
    call it with each save's record before ``save`` returns; ``"batched"``
    hands the records to a ``GroupCommit`` writer. The store encodes a save
    into a record from the delta ``_delta`` gives, then calls ``_commit``.
    """

    def __init__(self, write: Callable[[list[R]], None], *, durability: Durability | None, durable: bool,
                 max_pending: int, name: str) -> None:
        self.durability: Durability = durability_of(durability, durable)
        self.durable = self.durability != "off"
        self._write_records = write
        self._ledgers: dict[str, PartLedger] = {}
        self.saves = 0
        self._writer: GroupCommit[R] | None = (
            GroupCommit(write, max_pending=max_pending, name=name) if self.durability == "batched" else None)

    def _delta(self, run_state: RunState) -> tuple[PartLedger, CheckpointDelta]:
        """The run's ledger and what this save must store beyond what the ledger says is stored."""
        ledger = self._ledgers.get(run_state.run_id) or PartLedger()
        return ledger, run_state.checkpoint_delta(ledger)

    def _commit(self, run_state: RunState, ledger: PartLedger, delta: CheckpointDelta, record: R) -> None:
        """Write ``record`` as the mode says: now, or queued (waiting for the disk when the run stops)."""
        writer = self._writer
        if writer is None:
            self._write_records([record])
            ledger.apply(delta)  # only once committed: a failed write stored nothing
        else:
            # The writer commits in order, so the next delta may count on this one: the ledger moves on now.
            ledger.apply(delta)
            writer.submit(record, wait=run_state.status != "running")
        self._ledgers[run_state.run_id] = ledger
        self.saves += 1

    def _forget(self, run_id: str) -> None:
        self._ledgers.pop(run_id, None)

    def in_flight(self) -> int:
        """Saves handed to the background writer and not yet on disk (always 0 unless ``"batched"``)."""
        return self._writer.in_flight() if self._writer is not None else 0

    def flush(self) -> None:
        """Return once every save so far is on disk (a no-op unless ``durability="batched"``)."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Flush and stop the background writer (a no-op unless ``durability="batched"``)."""
        if self._writer is not None:
            self._writer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_open_writers: weakref.WeakSet[GroupCommit[Any]] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    """A process that ends normally (even through an exception) leaves its queued checkpoints on disk."""
    for writer in list(_open_writers):
        try:
            writer.flush()
        except Exception:  # noqa: BLE001, S110 - nothing is left to tell at exit; the run resumes from disk
            pass
