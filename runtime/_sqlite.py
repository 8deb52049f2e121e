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
row refers to it). The ``runs`` row stays the latest state alone. Which
parts a kept checkpoint needs is read from its state
(``RunState.parts_left_out``) when pruning: a list of them stored in each row
held a key per chunk of every collected list, so the row grew with the run.

What a commit writes is what its fsync costs, so the layout keeps a
superstep's commit to a few pages of the log (schema version 3):

* ``runs`` is a rowid table updated in place (an upsert): a state up to
  about 4 KB stays in its leaf page. (A ``WITHOUT ROWID`` row over about
  1 KB spills into an overflow page, freed and reallocated at every save.)
* ``events`` holds one row per save, the superstep's events as one JSON
  array, under the integer key ``(run rowid << 32) | first seq``: one
  b-tree and no index to update, and a run's rows are a key range
  (appended at the right edge for the newest run, where SQLite adds a page
  without rebalancing siblings). One event per row in a ``WITHOUT ROWID``
  table rebalanced three leaf pages per commit. An event saved again under
  its ``seq`` (a superstep re-run) replaces the earlier one on reading.

* ``history`` rows hold the step, status, attempt, trace number and state:
  nothing that grows with the number of collected items but the state.

Older files are converted when opened: version 1 (one event per row) and
versions 1 and 2 (history rows with a ``part_keys`` column). A file of a
newer version is refused rather than written in a layout this code does not
know.
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
from runtime._parts import CheckpointDelta, PartLedger
from runtime._state import RunState
from runtime._trace import TraceEvent

SCHEMA_VERSION = 3
#: An events row's key is ``(run rowid << _SEQ_BITS) | seq of its first event``.
_SEQ_BITS = 32
_SEQ_LIMIT = 1 << _SEQ_BITS
_RUN_LIMIT = 1 << (63 - _SEQ_BITS)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, state BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS parts (run_id TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, "
    "PRIMARY KEY (run_id, key)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, events BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS history (run_id TEXT NOT NULL, step INTEGER NOT NULL, status TEXT NOT NULL, "
    "attempt INTEGER NOT NULL, trace_seq INTEGER NOT NULL, state BLOB NOT NULL, PRIMARY KEY (run_id, step)) "
    "WITHOUT ROWID",
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
    parts: list[tuple[str, str, bytes]]
    first_seq: int  # of the superstep's first event
    events: bytes  # the superstep's events as one JSON array; b"" when it had none
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
        try:
            self._db.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
            self._create_schema(self._db)
        except BaseException:
            self._db.close()
            raise

    def _create_schema(self, db: sqlite3.Connection) -> None:
        """Create the tables, or convert an older file: version 1's events (one per row, ``WITHOUT ROWID`` runs),
        and the ``part_keys`` column of version 1 and 2 history rows."""
        db.execute("BEGIN IMMEDIATE")
        try:
            (version,) = db.execute("PRAGMA user_version").fetchone()
            if version > SCHEMA_VERSION:
                raise ValueError(f"{self.path}: the file is SqliteCheckpointer schema version {version}, newer than "
                                 f"this Trellis writes ({SCHEMA_VERSION}); open it with the Trellis that wrote it, "
                                 "or use a new file")
            old_events = version < SCHEMA_VERSION and "event" in _columns(db, "events")
            old_history = version < SCHEMA_VERSION and "part_keys" in _columns(db, "history")
            if old_events:
                db.execute("ALTER TABLE runs RENAME TO runs_v1")
                db.execute("ALTER TABLE events RENAME TO events_v1")
            if old_history:
                db.execute("ALTER TABLE history RENAME TO history_v2")
            for statement in _SCHEMA:
                db.execute(statement)
            if old_events:
                db.execute("INSERT INTO runs (run_id, state) SELECT run_id, state FROM runs_v1")
                db.execute(f"INSERT INTO events (id, events) SELECT (runs.rowid << {_SEQ_BITS}) | events_v1.seq, "
                           "CAST('[' || event || ']' AS BLOB) FROM events_v1 JOIN runs USING (run_id)")
                db.execute("DROP TABLE runs_v1")
                db.execute("DROP TABLE events_v1")
            if old_history:
                # The keys each row listed are what its state leaves out (read from the state from now on).
                db.execute("INSERT INTO history (run_id, step, status, attempt, trace_seq, state) "
                           "SELECT run_id, step, status, attempt, trace_seq, state FROM history_v2")
                db.execute("DROP TABLE history_v2")
            if version < SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

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
            [(run_id, key, pydantic_core.to_json(value)) for key, value in delta.new.items()],
            min((event.seq for event in events), default=0),
            pydantic_core.to_json([event.to_dict() for event in events]) if events else b"", delta)
        self._commit(run_state, ledger, delta, record)

    def _write(self, records: list[_Save]) -> None:
        """Commit ``records`` in order in one transaction (one fsync when durable)."""
        last = {record.run_id: record for record in records}
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                keys = {run_id: self._put_state(db, record) for run_id, record in last.items()}
                for record in records:
                    self._write_one(db, record, keys[record.run_id])
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    @staticmethod
    def _put_state(db: sqlite3.Connection, record: _Save) -> int:
        """Store the run's latest state (updated in place); the run's rowid, which keys its events."""
        (key,) = db.execute("INSERT INTO runs (run_id, state) VALUES (?, ?) ON CONFLICT (run_id) "
                            "DO UPDATE SET state = excluded.state RETURNING rowid", (record.run_id, record.state)
                            ).fetchone()
        if key >= _RUN_LIMIT:
            raise ValueError(f"run {record.run_id!r}: the database holds more runs than its event keys can number "
                             f"({_RUN_LIMIT:,}); start a new file")
        return int(key)

    def _write_one(self, db: sqlite3.Connection, record: _Save, run_key: int) -> None:
        run_id, delta = record.run_id, record.delta
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
            if not 0 <= record.first_seq < _SEQ_LIMIT:
                raise ValueError(f"run {run_id!r}: event seq {record.first_seq} is outside 0..{_SEQ_LIMIT - 1}")
            db.execute("INSERT OR REPLACE INTO events (id, events) VALUES (?, ?)",
                       ((run_key << _SEQ_BITS) | record.first_seq, record.events))

    @staticmethod
    def _save_history(db: sqlite3.Connection, record: _Save, policy: HistoryPolicy) -> None:
        """Keep this checkpoint as history, prune what the policy lets go, and drop the parts nothing needs."""
        run_id, delta = record.run_id, record.delta
        candidates = set(delta.gone)
        if record.ends_history:
            db.execute("DELETE FROM history WHERE run_id = ?", (run_id,))
            candidates.update(key for (key,) in db.execute("SELECT key FROM parts WHERE run_id = ?", (run_id,)))
        else:
            db.execute("INSERT OR REPLACE INTO history (run_id, step, status, attempt, trace_seq, state) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (run_id, record.step, record.status, record.attempt,
                                                     record.trace_seq, record.state))
            # Only a bounded policy drops checkpoints. With ``all``, listing the kept steps at every save would
            # make each save O(supersteps) and a long run quadratic.
            steps = [] if policy.keep_last is None else [
                step for (step,) in db.execute("SELECT step FROM history WHERE run_id = ?", (run_id,))]
            dropped = sorted(set(steps) - policy.keep(steps))
            for step in dropped:
                (old,) = db.execute("SELECT state FROM history WHERE run_id = ? AND step = ?",
                                    (run_id, step)).fetchone()
                candidates.update(_parts_needed(old))
                db.execute("DELETE FROM history WHERE run_id = ? AND step = ?", (run_id, step))
            if delta.fresh:
                # Another process may have stored parts that neither this state nor the history refers to.
                candidates.update(key for (key,) in db.execute("SELECT key FROM parts WHERE run_id = ?", (run_id,)))
            elif policy.keep_last is None:
                # Every part that was ever live is in a kept checkpoint: nothing can be dropped.
                return
        # What the latest state still needs stays: a dropped checkpoint's parts (the items, the input, the chunks
        # of growing lists) are nearly always still live, and then no kept state is read.
        candidates -= delta.live_keys()
        if not candidates:
            return
        referenced: set[str] = set()
        for (kept,) in db.execute("SELECT state FROM history WHERE run_id = ?", (run_id,)):
            referenced.update(_parts_needed(kept))
        db.executemany("DELETE FROM parts WHERE run_id = ? AND key = ?",
                       [(run_id, key) for key in sorted(candidates - referenced)])

    def delete(self, run_id: str) -> None:
        self.flush()
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM events WHERE id >= ? AND id < ?", _events_of(db, run_id))
                for table in ("runs", "parts", "history"):
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
        run_state = RunState.join_parts(data, parts)
        # When the run's stored parts are exactly what this state names, this checkpointer knows what is stored:
        # the resumed run's first save is then as cheap as any other, not a snapshot that sweeps and rewrites
        # every part (a 100,000-item foreach's items). Any other part (a kept checkpoint's, one left by another
        # writer) leaves the ledger fresh, and the first save sorts them out.
        ledger = PartLedger()
        delta = run_state.checkpoint_delta(ledger)
        if delta.live_keys() == parts.keys():
            ledger.apply(delta)
            self._ledgers[run_id] = ledger
        return run_state

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
                row = db.execute("SELECT state FROM history WHERE run_id = ? AND step = ?", (run_id, step)).fetchone()
                data: Any = None
                stored: list[tuple[str, bytes]] = []
                if row is not None:
                    data = _json_of(row[0], run_id, f"kept checkpoint at superstep {step}")
                    wanted = RunState.parts_left_out(data) if isinstance(data, dict) else []
                    # In slices: SQLite before 3.32 allows 999 parameters a statement.
                    for start in range(0, len(wanted), 500):
                        some = wanted[start:start + 500]
                        stored += db.execute(
                            f"SELECT key, value FROM parts WHERE run_id = ? AND key IN ({','.join('?' * len(some))})",
                            (run_id, *some)).fetchall()  # noqa: S608 - placeholders only
            finally:
                db.execute("COMMIT")
        if row is None:
            raise CheckpointNotFoundError(f"run {run_id!r} has no kept checkpoint at superstep {step}",
                                          run_id=run_id, step=step)
        return RunState.join_parts(data, {key: json.loads(value) for key, value in stored})

    def load_events(self, run_id: str) -> list[TraceEvent]:
        self.flush()
        with self._lock:
            db = self._db
            db.execute("BEGIN")
            try:
                rows = db.execute("SELECT events FROM events WHERE id >= ? AND id < ? ORDER BY id",
                                  _events_of(db, run_id)).fetchall()
            finally:
                db.execute("COMMIT")
        # Rows in seq order, events in seq order within one: an event saved again (a superstep re-run) wins.
        by_seq = {event["seq"]: event for (saved,) in rows for event in json.loads(saved)}
        return [TraceEvent.from_dict(by_seq[seq]) for seq in sorted(by_seq)]

    def run_ids(self) -> list[str]:
        self.flush()
        with self._lock:
            return [run_id for (run_id,) in self._db.execute("SELECT run_id FROM runs ORDER BY run_id")]


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    """The column names of ``table`` (empty when there is no such table)."""
    return {row[0] for row in db.execute("SELECT name FROM pragma_table_info(?)", (table,))}


def _json_of(stored: bytes, run_id: str, what: str) -> Any:
    try:
        return json.loads(stored)
    except ValueError as exc:
        raise CorruptRunStateError(f"run {run_id!r}: the {what} is not JSON: {exc}", run_id=run_id) from None


def _parts_needed(state: bytes) -> list[str]:
    """The parts a kept checkpoint's ``state`` leaves out. Read from the state itself: a list of them stored in
    each history row held a key per chunk of every collected list, so the row grew with the run. A state that is
    not JSON needs nothing: it cannot be loaded anyway (``load_at`` says so), and refusing here would stop every
    later save of the run."""
    try:
        data = json.loads(state)
    except ValueError:
        return []
    return RunState.parts_left_out(data) if isinstance(data, dict) else []


def _events_of(db: sqlite3.Connection, run_id: str) -> tuple[int, int]:
    """The key range of the run's events rows (empty for an unknown run)."""
    row = db.execute("SELECT rowid FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return 0, 0
    return row[0] << _SEQ_BITS, (row[0] + 1) << _SEQ_BITS
