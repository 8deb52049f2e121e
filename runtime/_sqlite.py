"""``SqliteCheckpointer``: RunStates and their trace in one SQLite file, through the standard library.

One ``save`` is one transaction: the state row, the write-once parts that are
new since this checkpointer's last save of the run (``RunState.checkpoint_delta``),
the removal of parts nothing refers to any more, and the superstep's trace
events. So a save costs what changed, not what the run's lists hold, and a
process killed at any point leaves the last committed superstep whole.

The database runs in WAL mode (one append to the log per commit, no
rollback journal to write and delete) with ``synchronous=FULL``, so a commit
is one fsync of the log and survives power loss. ``durability``
(``runtime._group_commit``): ``"sync"`` (the default, also ``durable=True``)
commits each save before it returns; ``"batched"`` commits the saves queued
behind one another in one transaction and one fsync from a background
writer (at most ``max_pending`` in flight, and synchronous when the run
stops: completed, failed, interrupted, waiting, cancelled); ``"off"`` (also
``durable=False``) commits each save with ``synchronous=NORMAL``: it survives
a killed process but not a power cut, and skips the fsync.

With a ``HistoryPolicy`` each save also writes a ``history`` row for its
superstep: the state data without its parts, which stay shared in ``parts``
(a part is dropped only when neither the latest state nor a kept history
row refers to it). The ``runs`` row stays the latest state alone.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic_core

from runtime._checkpoint import CheckpointInfo, HistoryPolicy
from runtime._errors import CheckpointNotFoundError, CorruptRunStateError
from runtime._group_commit import MAX_PENDING, Durability, GroupCommitStore
from runtime._parts import CheckpointDelta
from runtime._state import RunState
from runtime._trace import TraceEvent

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, state BLOB NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS parts (run_id TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, "
    "PRIMARY KEY (run_id, key)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, event BLOB NOT NULL, "
    "PRIMARY KEY (run_id, seq)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS history (run_id TEXT NOT NULL, step INTEGER NOT NULL, status TEXT NOT NULL, "
    "attempt INTEGER NOT NULL, trace_seq INTEGER NOT NULL, state BLOB NOT NULL, part_keys BLOB NOT NULL, "
    "PRIMARY KEY (run_id, step)) WITHOUT ROWID",
)


@dataclass(frozen=True, slots=True)
class _Save:
    """One save, encoded in the caller (a snapshot): what the writer puts in the database."""

    run_id: str
    step: int
    status: str
    attempt: int
    trace_seq: int
    ends_history: bool
    state: bytes
    part_keys: bytes  # JSON list of the part keys the state leaves out (for a history row)
    parts: list[tuple[str, str, bytes]]
    events: list[tuple[str, int, bytes]]
    delta: CheckpointDelta


class SqliteCheckpointer(GroupCommitStore[_Save]):
    """Saves RunStates, their write-once parts and trace events in one SQLite database file.

    Safe to share between threads (one connection behind a lock); several
    processes may open the same file (SQLite locks it per transaction).
    ``close()`` (or ``with``) releases the connection, after ``flush()``.
    """

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = True, durability: Durability | None = None,
                 max_pending: int = MAX_PENDING, history: HistoryPolicy | None = None) -> None:
        self.history_policy = history
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(self._write, durability=durability, durable=durable, max_pending=max_pending,
                         name=f"trellis-sqlite-writer:{self.path.name}")
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
        for statement in _SCHEMA:
            self._db.execute(statement)

    def close(self) -> None:
        """Flush, then release the connection."""
        try:
            super().close()
        finally:
            with self._lock:
                self._db.close()

    # -- writing ---------------------------------------------------------------------

    def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        run_id = run_state.run_id
        ledger, delta = self._delta(run_state)
        policy = self.history_policy
        record = _Save(
            run_id, run_state.step, run_state.status, run_state.attempt, run_state.trace_seq,
            policy is not None and policy.ends(run_state), pydantic_core.to_json(delta.data),
            json.dumps(RunState.parts_left_out(delta.data)).encode() if policy is not None else b"",
            [(run_id, key, pydantic_core.to_json(value)) for key, value in delta.new.items()],
            [(run_id, event.seq, pydantic_core.to_json(event.to_dict())) for event in events], delta)
        self._commit(run_state, ledger, delta, record)

    def _write(self, records: list[_Save]) -> None:
        """Commit ``records`` in order in one transaction (one fsync when durable)."""
        last = {record.run_id: record for record in records}
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                for record in records:
                    self._write_one(db, record, latest=last[record.run_id] is record)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _write_one(self, db: sqlite3.Connection, record: _Save, *, latest: bool) -> None:
        run_id, delta = record.run_id, record.delta
        if latest:  # an earlier save of the run in the same transaction would be overwritten at once
            db.execute("INSERT OR REPLACE INTO runs (run_id, state) VALUES (?, ?)", (run_id, record.state))
        if self.history_policy is None:
            if delta.fresh:
                # Another process may have stored parts of this run that no state refers to now.
                live = delta.live_keys()
                stale = [(run_id, key) for (key,) in db.execute("SELECT key FROM parts WHERE run_id = ?",
                                                                 (run_id,)) if key not in live]
                db.executemany("DELETE FROM parts WHERE run_id = ? AND key = ?", stale)
            if delta.gone:
                db.executemany("DELETE FROM parts WHERE run_id = ? AND key = ?",
                               [(run_id, key) for key in delta.gone])
        else:
            self._save_history(db, record, self.history_policy)
        if record.parts:
            db.executemany("INSERT OR REPLACE INTO parts (run_id, key, value) VALUES (?, ?, ?)", record.parts)
        if record.events:
            db.executemany("INSERT OR REPLACE INTO events (run_id, seq, event) VALUES (?, ?, ?)", record.events)

    @staticmethod
    def _save_history(db: sqlite3.Connection, record: _Save, policy: HistoryPolicy) -> None:
        """Keep this checkpoint as history, prune what the policy lets go, and drop the parts nothing needs."""
        run_id, delta = record.run_id, record.delta
        candidates = set(delta.gone)
        if record.ends_history:
            db.execute("DELETE FROM history WHERE run_id = ?", (run_id,))
            candidates.update(key for (key,) in db.execute("SELECT key FROM parts WHERE run_id = ?", (run_id,)))
        else:
            db.execute("INSERT OR REPLACE INTO history (run_id, step, status, attempt, trace_seq, state, part_keys) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)", (run_id, record.step, record.status, record.attempt,
                                                        record.trace_seq, record.state, record.part_keys))
            steps = [step for (step,) in db.execute("SELECT step FROM history WHERE run_id = ?", (run_id,))]
            dropped = sorted(set(steps) - policy.keep(steps))
            for step in dropped:
                (old,) = db.execute("SELECT part_keys FROM history WHERE run_id = ? AND step = ?",
                                    (run_id, step)).fetchone()
                candidates.update(json.loads(old))
                db.execute("DELETE FROM history WHERE run_id = ? AND step = ?", (run_id, step))
            if delta.fresh:
                # Another process may have stored parts that neither this state nor the history refers to.
                candidates.update(key for (key,) in db.execute("SELECT key FROM parts WHERE run_id = ?", (run_id,)))
            elif policy.keep_last is None:
                # Every part that was ever live is in a kept checkpoint: nothing can be dropped.
                return
        if not candidates:
            return
        referenced = delta.live_keys()
        for (kept,) in db.execute("SELECT part_keys FROM history WHERE run_id = ?", (run_id,)):
            referenced.update(json.loads(kept))
        db.executemany("DELETE FROM parts WHERE run_id = ? AND key = ?",
                       [(run_id, key) for key in sorted(candidates - referenced)])

    def delete(self, run_id: str) -> None:
        self.flush()
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                for table in ("runs", "parts", "events", "history"):
                    db.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))  # noqa: S608 - fixed names
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            self._forget(run_id)

    # -- reading ---------------------------------------------------------------------

    def load(self, run_id: str) -> RunState:
        self.flush()
        with self._lock:
            db = self._db
            db.execute("BEGIN")  # one snapshot for the state and its parts
            try:
                row = db.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
                stored = db.execute("SELECT key, value FROM parts WHERE run_id = ?", (run_id,)).fetchall()
            finally:
                db.execute("COMMIT")
        if row is None:
            raise CheckpointNotFoundError(f"no checkpoint for run {run_id!r}", run_id=run_id)
        try:
            data: Any = json.loads(row[0])
            parts = {key: json.loads(value) for key, value in stored}
        except ValueError as exc:
            raise CorruptRunStateError(f"run {run_id!r}: the stored checkpoint is not JSON: {exc}",
                                       run_id=run_id) from None
        return RunState.join_parts(data, parts)

    def history(self, run_id: str) -> list[CheckpointInfo]:
        self.flush()
        with self._lock:
            rows = self._db.execute("SELECT step, status, attempt, trace_seq FROM history WHERE run_id = ? "
                                    "ORDER BY step", (run_id,)).fetchall()
        return [CheckpointInfo(*row) for row in rows]

    def load_at(self, run_id: str, step: int) -> RunState:
        self.flush()
        with self._lock:
            db = self._db
            db.execute("BEGIN")
            try:
                row = db.execute("SELECT state, part_keys FROM history WHERE run_id = ? AND step = ?",
                                 (run_id, step)).fetchone()
                stored = []
                if row is not None:
                    wanted = json.loads(row[1])
                    stored = db.execute(
                        f"SELECT key, value FROM parts WHERE run_id = ? AND key IN ({','.join('?' * len(wanted))})",
                        (run_id, *wanted)).fetchall() if wanted else []  # noqa: S608 - placeholders only
            finally:
                db.execute("COMMIT")
        if row is None:
            raise CheckpointNotFoundError(f"run {run_id!r} has no kept checkpoint at superstep {step}",
                                          run_id=run_id, step=step)
        return RunState.join_parts(json.loads(row[0]), {key: json.loads(value) for key, value in stored})

    def load_events(self, run_id: str) -> list[TraceEvent]:
        self.flush()
        with self._lock:
            rows = self._db.execute("SELECT event FROM events WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
        return [TraceEvent.from_dict(json.loads(event)) for (event,) in rows]

    def run_ids(self) -> list[str]:
        self.flush()
        with self._lock:
            return [run_id for (run_id,) in self._db.execute("SELECT run_id FROM runs ORDER BY run_id")]
