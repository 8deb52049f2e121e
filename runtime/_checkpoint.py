"""Checkpointers: where the engine leaves a RunState (and the trace events of each superstep).

The engine calls ``save(run_state, events)`` once per superstep, after the
commit, with the events that superstep produced. An implementation must store
both as one unit where it can (the designer's ORM checkpointer writes them in
one transaction) and must keep a snapshot, never a reference: the engine goes
on mutating the RunState it passed.

Checkpoint history (for forking a run from a past superstep): with a
``HistoryPolicy`` an implementation also keeps earlier checkpoints, apart
from the latest one, so the live state never grows with them. ``history``
lists what is kept, ``load_at`` loads one. Retention:

* ``HistoryPolicy()``: every checkpoint, for as long as the run is stored;
* ``HistoryPolicy(keep_last=N)``: the last N checkpoints of each run;
* ``until_end=True`` (with either): the history is dropped when the run
  completes or is cancelled (a failed run keeps it: it may be redriven).

Without a policy (``history=None``, the default of the runtime's own
checkpointers) nothing but the latest checkpoint is kept.

``runtime.testing.checkpointer_conformance`` holds the tests every
implementation must pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

import pydantic_core

from runtime._errors import CheckpointNotFoundError, CorruptRunStateError
from runtime._group_commit import MAX_PENDING, Durability, GroupCommitStore, sync_file
from runtime._parts import PartLedger
from runtime._state import RunState, RunStateSnapshot
from runtime._trace import TraceEvent

_SAFE_RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")


@dataclass(frozen=True, slots=True)
class HistoryPolicy:
    """Which past checkpoints a checkpointer keeps (see the module docstring)."""

    keep_last: int | None = None
    until_end: bool = False

    def __post_init__(self) -> None:
        if self.keep_last is not None and (isinstance(self.keep_last, bool) or not isinstance(self.keep_last, int)
                                           or self.keep_last < 1):
            raise ValueError(f"keep_last is a positive number of checkpoints, or None for all of them, "
                             f"not {self.keep_last!r}")

    def ends(self, run_state: RunState) -> bool:
        """True when this save ends the run's history (``until_end`` and the run completed or was cancelled)."""
        return self.until_end and run_state.status in ("completed", "cancelled")

    def keep(self, steps: Sequence[int]) -> set[int]:
        """Of the steps of a run's kept checkpoints, those to keep."""
        ordered = sorted(steps)
        return set(ordered if self.keep_last is None else ordered[-self.keep_last:])

    @classmethod
    def parse(cls, value: object) -> HistoryPolicy | None:
        """A policy from a setting: ``"all"``, ``"all-until-end"``, a number N (the last N), ``"N-until-end"``,
        or ``0`` / ``"none"`` for no history."""
        text = str(value).strip().lower()
        until_end = text.endswith("-until-end")
        text = text.removesuffix("-until-end")
        if text in ("none", "0", "off") and not until_end:
            return None
        if text == "all":
            return cls(None, until_end)
        if text.isdigit() and int(text) > 0:
            return cls(int(text), until_end)
        raise ValueError(f"checkpoint history {value!r}: use 'all', a positive number of checkpoints to keep, "
                         "either with '-until-end' (e.g. 'all-until-end', '20-until-end'), or 'none'")


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """One kept checkpoint: after which superstep, the run's status and attempt then, and its trace position."""

    step: int
    status: str
    attempt: int
    trace_seq: int

    @classmethod
    def of(cls, run_state: RunState) -> CheckpointInfo:
        return cls(run_state.step, run_state.status, run_state.attempt, run_state.trace_seq)

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "status": self.status, "attempt": self.attempt, "trace_seq": self.trace_seq}


def _no_history(run_id: str, step: int) -> CheckpointNotFoundError:
    return CheckpointNotFoundError(f"run {run_id!r} has no kept checkpoint at superstep {step}", run_id=run_id,
                                   step=step)


@runtime_checkable
class Checkpointer(Protocol):
    def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        """Store a snapshot of ``run_state`` and append ``events`` to the run's trace, together."""
        ...

    def load(self, run_id: str) -> RunState:
        """The latest saved state; raises ``CheckpointNotFoundError`` when there is none."""
        ...

    def load_events(self, run_id: str) -> list[TraceEvent]:
        """Every event saved with the run's states, in ``seq`` order (empty for an unknown run)."""
        ...

    def delete(self, run_id: str) -> None:
        """Forget the run (its history included); deleting an unknown run does nothing."""
        ...

    def history(self, run_id: str) -> list[CheckpointInfo]:
        """The kept checkpoints of the run, oldest first (empty without a history policy or for an unknown run).
        A superstep saved twice (re-run after a crash) is kept once, as last saved."""
        ...

    def load_at(self, run_id: str, step: int) -> RunState:
        """The kept checkpoint after superstep ``step``; ``CheckpointNotFoundError`` when it is not kept."""
        ...


@runtime_checkable
class AsyncCheckpointer(Checkpointer, Protocol):
    """A checkpointer that can also save without blocking an event loop: ``Engine.arun`` and the other async
    calls await ``asave`` instead of calling ``save``."""

    async def asave(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        """``save``, awaited."""
        ...


def _not_found(run_id: str) -> CheckpointNotFoundError:
    return CheckpointNotFoundError(f"no checkpoint for run {run_id!r}", run_id=run_id)


class InMemoryCheckpointer:
    """Keeps each run's latest state as a structural snapshot (``RunState.snapshot``).

    Saving copies the live structure only and shares the immutable JSON
    values, so a superstep's save does not grow with the size of the data
    (a foreach's 100,000-item snapshot is not re-serialized every step).
    ``load`` rebuilds the state through its JSON form, which gives the caller
    an independent object and proves the checkpoint round-trips.
    """

    def __init__(self, *, history: HistoryPolicy | None = None) -> None:
        self.history_policy = history
        self._states: dict[str, RunStateSnapshot] = {}
        self._events: dict[str, list[TraceEvent]] = {}
        self._history: dict[str, dict[int, tuple[CheckpointInfo, RunStateSnapshot]]] = {}
        self._lock = threading.Lock()
        self.saves = 0

    def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        snapshot = run_state.snapshot()
        policy = self.history_policy
        with self._lock:
            run_id = run_state.run_id
            self._states[run_id] = snapshot
            if events:
                kept_events = self._events.get(run_id)
                if kept_events is None:  # not setdefault: that makes a list at every save to throw away
                    kept_events = self._events[run_id] = []
                kept_events.extend(events)
            if policy is not None:
                if policy.ends(run_state):
                    self._history.pop(run_id, None)
                else:
                    kept = self._history.setdefault(run_id, {})
                    kept[run_state.step] = (CheckpointInfo.of(run_state), snapshot)
                    if policy.keep_last is not None:  # ``all`` drops nothing: no O(kept) pass per save
                        for step in set(kept) - policy.keep(list(kept)):
                            del kept[step]
            self.saves += 1

    def history(self, run_id: str) -> list[CheckpointInfo]:
        with self._lock:
            kept = self._history.get(run_id, {})
            return [kept[step][0] for step in sorted(kept)]

    def load_at(self, run_id: str, step: int) -> RunState:
        with self._lock:
            found = self._history.get(run_id, {}).get(step)
        if found is None:
            raise _no_history(run_id, step)
        return found[1].restore()

    def load(self, run_id: str) -> RunState:
        with self._lock:
            snapshot = self._states.get(run_id)
        if snapshot is None:
            raise _not_found(run_id)
        return snapshot.restore()

    def load_events(self, run_id: str) -> list[TraceEvent]:
        with self._lock:
            return list(self._events.get(run_id, ()))

    def delete(self, run_id: str) -> None:
        with self._lock:
            self._states.pop(run_id, None)
            self._events.pop(run_id, None)
            self._history.pop(run_id, None)

    def run_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._states)


@dataclass(frozen=True, slots=True)
class _Line:
    """One save of a run, encoded in the caller: the log record, and what the writer must do besides appending."""

    run_id: str
    line: bytes
    #: A snapshot record (``"base"``): the whole state and every live part. The checkpointer's first save of a
    #: run is one (what an earlier process stored is unknown), then one whenever the records since the last
    #: snapshot outweigh it, so ``load`` reads a snapshot and a short tail whatever the run's length.
    base: bool
    #: The run's history ends with this save (``HistoryPolicy.until_end``): the log is rewritten without it.
    ends_history: bool
    #: The run stops with this save (completed, failed, interrupted, waiting, cancelled): a padded log is cut
    #: back to its records, so a stopped run holds no padding.
    stops: bool = False


class FileCheckpointer(GroupCommitStore[_Line]):
    """One append-only log per run, ``<run_id>.log`` in one directory: one line per save.

    A save appends one JSON line holding the superstep's state (without its
    write-once parts), the parts that are new since this checkpointer's last
    save of the run (``RunState.checkpoint_delta``: a foreach's item snapshot,
    a scope's input, full chunks of growing lists), the keys of parts nothing
    refers to any more, and the superstep's trace events. So a save costs what
    changed, not what the run's lists hold, and state and events are one unit:
    a process killed mid-append leaves a torn last line, which ``load`` and
    ``load_events`` ignore (the resumed run redoes that superstep), and which
    the next save cuts off before it appends. A line that cannot be read
    anywhere else is damage: ``CorruptRunStateError``.

    ``durability`` (``runtime._group_commit``): ``"sync"`` (also
    ``durable=True``) fdatasyncs the log once per save (the directory too when
    a log is created or replaced), which survives power loss, not just a kill;
    ``"batched"`` appends the saves queued behind one another with one write
    and one fdatasync per run from a background writer; ``"off"`` (the
    default, ``durable=False``) writes each save before returning, without a
    sync.

    Padding (``"sync"`` only): an fdatasync after an append that grows the
    file must also commit the file system's journal (the new size, new
    blocks); one after overwriting blocks the file already has flushes the
    data alone. So with ``"sync"`` the log ends in written zeros
    (``preallocate`` bytes more whenever a save reaches the end; a
    ``fallocate``d range would not do: ext4 keeps it unwritten and converts
    it, in the journal, at the first write) and each save overwrites the
    padding in place: only the save that extends it pays for a journal
    commit (about 10% of a synced superstep on the bench machine's disk when
    it is quick; when it is slow the flush itself dominates). Readers take
    the log to end at its last whole record: trailing zeros are padding, and
    a last line holding a zero byte is a record torn by a crash (the disk
    kept some of its blocks and not others; JSON never holds a raw zero
    byte), ignored like a line without its newline. Only the last record
    can be torn, as each save is synced before the next is written. A
    checkpointer that opens a log cuts it back to its whole records first,
    and a stopped run's log is cut back to them too.

    Snapshots keep ``load`` flat in the run's history: a snapshot record
    (its line opens with ``{"base":``) holds the whole state and every live
    part, so ``load`` reads the log back from its end to the last snapshot
    and applies only what follows. A checkpointer's first save of a run is a
    snapshot (it cannot know which parts an earlier process stored are still
    live; the log is appended to, never rewritten, on resume), and so is the
    first save after the records since the last snapshot outweigh it (and
    ``snapshot_min_bytes``): snapshots cost at most what the records between
    them do. The log is compacted (rewritten as every event in a record of
    its own, the kept history, and the latest state as a snapshot, then
    renamed over the old one) when it has grown to ``compact_factor`` times
    its size after the last compaction (and at least ``compact_min_bytes``),
    so compaction costs O(1) per save amortized. ``load_events``,
    ``history`` and ``load_at`` read the whole log.

    One process writes a run's log at a time.

    History: with a ``HistoryPolicy`` every line is also a kept checkpoint
    (marked ``"kept"``), joined with the parts the log holds (a part key is
    never reused for other content, so a ``gone`` part is still the right one
    for an older state). So history costs nothing per save beyond the line
    the log writes anyway: O(change). Compaction keeps the states of the
    checkpoints the policy keeps and the parts they refer to, and drops the
    rest; ``until_end`` rewrites the log without its history when the run
    completes or is cancelled.
    """

    def __init__(self, directory: str | os.PathLike[str], *, durable: bool = False,
                 durability: Durability | None = None, max_pending: int = MAX_PENDING,
                 compact_factor: float = 2.0, compact_min_bytes: int = 1 << 20,
                 snapshot_min_bytes: int = 1 << 13, preallocate: int = 1 << 18,
                 history: HistoryPolicy | None = None) -> None:
        self.history_policy = history
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        super().__init__(self._write, durability=durability, durable=durable, max_pending=max_pending,
                         name="trellis-log-writer")
        self.compact_factor = compact_factor
        self.compact_min_bytes = compact_min_bytes
        self.snapshot_min_bytes = snapshot_min_bytes
        # Padding only where each save is synced on its own: a batched write of several records could leave a
        # whole record after a torn one (blocks persist in any order), which a reader could not tell apart.
        self.preallocate = max(0, preallocate) if self.durability == "sync" else 0
        #: Per run whose log is padded: the file's size, records and padding (its records end at ``_sizes``).
        self._allocated: dict[str, int] = {}
        #: Per run, as saves are encoded: (bytes of the records since the last snapshot, that snapshot's size).
        self._since_base: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()
        self._counter = 0
        self._sizes: dict[str, tuple[int, int]] = {}  # per run: (log size now, size after the last compaction)
        self.compactions = 0

    def log_path(self, run_id: str) -> Path:
        if not isinstance(run_id, str) or not _SAFE_RUN_ID.fullmatch(run_id) or ".." in run_id:
            raise ValueError(f"run id {run_id!r} cannot name a checkpoint file")
        return self.directory / f"{run_id}.log"

    @staticmethod
    def _sync_directory(directory: Path) -> None:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @staticmethod
    def _record(data: Any, new: Mapping[str, Any], gone: Sequence[str], events: Sequence[dict[str, Any]],
                *, kept: bool, base: bool = False) -> bytes:
        # "base" comes first: a reader finds the last snapshot by its line's opening bytes (``_BASE``).
        record: dict[str, Any] = {"base": True} if base else {}
        record.update(state=data, new=new, gone=list(gone), events=list(events))
        if kept:
            record["kept"] = True
        return pydantic_core.to_json(record) + b"\n"

    # -- writing ---------------------------------------------------------------------

    def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        run_id = run_state.run_id
        self.log_path(run_id)  # refuse a run id that cannot name a file before anything is queued
        since, base_size = self._since_base.get(run_id, (0, 0))
        if since >= max(self.snapshot_min_bytes, base_size):
            # Time for a snapshot: a delta against an empty ledger holds every live part (and drops none).
            ledger, delta = PartLedger(), run_state.checkpoint_delta(PartLedger())
        else:
            ledger, delta = self._delta(run_state)
        policy = self.history_policy
        ends = policy is not None and policy.ends(run_state)
        base = delta.fresh
        line = _Line(run_id, self._record(delta.data, delta.new, delta.gone, line_events(events),
                                          kept=policy is not None and not ends, base=base), base, ends,
                     run_state.status != "running")
        self._commit(run_state, ledger, delta, line)
        self._since_base[run_id] = (0, len(line.line)) if base else (since + len(line.line), base_size)

    def _write(self, lines: list[_Line]) -> None:
        """Write ``lines`` in order: the appends of each run as one write and one sync."""
        with self._lock:
            pending: dict[str, list[bytes]] = {}

            def drain(run_id: str) -> None:
                chunk = pending.pop(run_id, None)
                if chunk:
                    path = self.log_path(run_id)
                    size, compacted = self._sizes[run_id]
                    size = self._append(run_id, path, b"".join(chunk), size)
                    self._sizes[run_id] = (size, compacted)
                    if size >= max(self.compact_min_bytes, self.compact_factor * compacted):
                        self._rewrite(run_id, path)

            stopped: set[str] = set()

            for item in lines:
                if item.run_id not in self._sizes:
                    # This checkpointer's first write of the run (its first save is a snapshot): append after the
                    # log's last whole record, cutting off a torn tail a crash left. Nothing is rewritten.
                    self._sizes[item.run_id] = self._open_log(self.log_path(item.run_id))
                pending.setdefault(item.run_id, []).append(item.line)
                if item.stops:
                    stopped.add(item.run_id)
                if item.ends_history:
                    drain(item.run_id)
                    self._rewrite(item.run_id, self.log_path(item.run_id))
            for run_id in list(pending):
                drain(run_id)
            for run_id in stopped:
                self._unpad(run_id)

    def _open_log(self, path: Path) -> tuple[int, int]:
        """(size, size after the last compaction) of the log at ``path`` as this checkpointer starts on it: its
        whole records, to which the file is cut back (a torn line, padding); a new log is created."""
        try:
            with open(path, "r+b") as handle:
                size = _scan_back(handle).end
                if handle.seek(0, os.SEEK_END) != size:
                    # Padding is only ever zeros written after the last record: what a torn record left goes.
                    # Not synced: a crash before the next save's sync leaves what the readers skip anyway.
                    handle.truncate(size)
        except FileNotFoundError:
            path.touch()
            if self.durable:
                self._sync_directory(path.parent)
            size = 0
        return size, size

    def _append(self, run_id: str, path: Path, chunk: bytes, size: int) -> int:
        """Write records at ``size``, over the padding or cutting off a torn tail a failed write left; the new
        size."""
        end = size + len(chunk)
        allocated = self._allocated.pop(run_id, size)
        with open(path, "r+b") as handle:
            fd = handle.fileno()
            try:
                if not self.preallocate:
                    os.ftruncate(fd, size)
                _write_at(fd, chunk, size)
                if self.preallocate and end > allocated:
                    # Extend the padding with this save: its sync commits the new size once for the saves to come.
                    allocated = -(-(end + self.preallocate) // _PAGE) * _PAGE
                    _pad(fd, end, allocated)
                if self.durable:
                    sync_file(fd)
            except BaseException:
                # Whatever part of the chunk reached the file goes: the next write starts at ``size`` again.
                os.ftruncate(fd, size)
                raise
        if self.preallocate:
            self._allocated[run_id] = max(allocated, end)
        return end

    def _unpad(self, run_id: str) -> None:
        """Cut a stopped run's log back to its records (not synced: padding a crash leaves is skipped)."""
        allocated = self._allocated.pop(run_id, None)
        size = self._sizes.get(run_id, (0, 0))[0]
        if allocated is not None and allocated > size:
            os.truncate(self.log_path(run_id), size)

    def _replace(self, path: Path, content: bytes) -> int:
        self._counter += 1
        temporary = path.parent / f".{path.name}.{os.getpid()}.{self._counter}.tmp"
        try:
            with open(temporary, "wb") as handle:
                handle.write(content)
                handle.flush()
                if self.durable:
                    os.fsync(handle.fileno())
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
        if self.durable:
            self._sync_directory(path.parent)
        return len(content)

    def _rewrite(self, run_id: str, path: Path) -> None:
        """Compact the log: every event, the kept history (per the policy), the latest state as a snapshot, and
        the parts they need."""
        try:
            log: _Log | None = self._read(run_id, path)
        except CheckpointNotFoundError:  # no log, or only a torn first line
            log = None
        records: list[bytes] = []
        if log is not None:
            policy = self.history_policy
            kept = log.kept_steps(policy) if policy is not None and not log.history_ended else {}
            latest = log.state
            states = [state for step, state in sorted(kept.items()) if state is not latest]
            live = set(RunState.parts_left_out(latest))
            older: set[str] = set()
            for state in states:
                older.update(RunState.parts_left_out(state))
            latest_kept = any(state is latest for state in kept.values())
            # The trace first, in a record of its own, then the kept checkpoints, then the latest state as a
            # snapshot: ``load`` reads from the snapshot on and never parses the trace.
            if log.events:
                records.append(pydantic_core.to_json({"trace": log.events}) + b"\n")
            for number, state in enumerate(states):
                parts = {key: log.all_parts[key] for key in sorted(older - live) if key in log.all_parts}
                records.append(self._record(state, parts if number == 0 else {}, (), [], kept=True))
            parts = {key: log.all_parts[key] for key in sorted(live) if key in log.all_parts}
            records.append(self._record(latest, parts, (), [], kept=latest_kept, base=True))
        size = self._replace(path, b"".join(records))
        self._sizes[run_id] = (size, size)
        self._allocated.pop(run_id, None)
        if log is not None:
            self.compactions += 1

    # -- reading ---------------------------------------------------------------------

    def _read(self, run_id: str, path: Path, *, from_snapshot: bool = False) -> _Log:
        """The run's log read back: all of it, or (``from_snapshot``) its last snapshot record and what follows,
        which is all ``load`` needs (the latest state and its live parts) and costs the same whatever the
        run's length."""
        try:
            with open(path, "rb") as handle:
                found = _scan_back(handle)
                if not from_snapshot:
                    handle.seek(0)
                    return _parse(run_id, handle.read(found.end), 0)
                start = found.base or 0  # a log without a snapshot (written before they were) from its start
                handle.seek(start)
                return _parse(run_id, handle.read(found.end - start), start)
        except FileNotFoundError:
            raise _not_found(run_id) from None

    def _read_logged(self, run_id: str, *, from_snapshot: bool = False) -> _Log:
        self.flush()
        with self._lock:
            return self._read(run_id, self.log_path(run_id), from_snapshot=from_snapshot)

    def load(self, run_id: str) -> RunState:
        log = self._read_logged(run_id, from_snapshot=True)
        return RunState.join_parts(log.state, log.parts)

    def load_events(self, run_id: str) -> list[TraceEvent]:
        try:
            log = self._read_logged(run_id)
        except CheckpointNotFoundError:
            return []
        return [TraceEvent.from_dict(event) for event in log.events]

    def history(self, run_id: str) -> list[CheckpointInfo]:
        policy = self.history_policy
        if policy is None:
            return []
        try:
            log = self._read_logged(run_id)
        except CheckpointNotFoundError:
            return []
        kept = log.kept_steps(policy)
        return [CheckpointInfo(step, kept[step]["status"], kept[step]["attempt"], kept[step]["trace_seq"])
                for step in sorted(kept)]

    def load_at(self, run_id: str, step: int) -> RunState:
        policy = self.history_policy
        try:
            log = self._read_logged(run_id) if policy is not None else None
        except CheckpointNotFoundError:
            log = None
        state = log.kept_steps(policy).get(step) if log is not None and policy is not None else None
        if log is None or state is None:
            raise _no_history(run_id, step)
        return RunState.join_parts(state, log.all_parts)

    def delete(self, run_id: str) -> None:
        path = self.log_path(run_id)
        self.flush()
        with self._lock:
            path.unlink(missing_ok=True)
            shutil.rmtree(path.with_suffix(".history"), ignore_errors=True)  # where earlier versions kept history
            self._forget(run_id)
            self._sizes.pop(run_id, None)
            self._allocated.pop(run_id, None)
            self._since_base.pop(run_id, None)

    def run_ids(self) -> list[str]:
        self.flush()
        return sorted(p.name[: -len(".log")] for p in self.directory.glob("*.log") if not p.name.startswith("."))


def _write_at(fd: int, data: bytes, offset: int) -> None:
    written = 0
    while written < len(data):
        written += os.pwrite(fd, data[written:], offset + written)


def _pad(fd: int, start: int, end: int) -> None:
    """Write zeros from ``start`` to ``end`` a page at a time. One large write would be cached as one large folio,
    and a save that overwrote a few bytes of it would dirty, and its sync write, the whole folio (a MiB per save,
    measured), where a page at a time keeps a save to the pages it touches."""
    zeros = bytes(_PAGE)
    position = start
    while position < end:
        boundary = min(end, (position // _PAGE + 1) * _PAGE)
        _write_at(fd, zeros[: boundary - position], position)
        position = boundary


def line_events(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    return [event.to_dict() for event in events]


#: How a snapshot record's line opens (``FileCheckpointer._record``). A raw newline only ever ends a record (JSON
#: escapes it inside strings), so a newline followed by this is the start of a snapshot, found from the end.
_BASE = b'{"base":'
_SCAN_BLOCK = 1 << 16
#: Padding is added in whole pages of the page cache.
_PAGE = 4096


@dataclass(frozen=True, slots=True)
class _Found:
    #: The end of the log's last whole record (a torn line after it is ignored).
    end: int
    #: Where the last whole snapshot record starts, None when the log has none.
    base: int | None


def _scan_back(handle: BinaryIO) -> _Found:
    """Find, reading back from the end of the log, its last whole record and its last snapshot before that."""
    end = _records_end(handle, handle.seek(0, os.SEEK_END))
    position = end
    later = b""  # the start of the block read before (later in the file): a marker may straddle two blocks
    while position > 0:
        size = min(_SCAN_BLOCK, position)
        position -= size
        handle.seek(position)
        block = handle.read(size)
        at = (block + later).rfind(b"\n" + _BASE)
        if at >= 0:
            return _Found(end, position + at + 1)
        later = block[: len(_BASE)]
    return _Found(end, 0 if end and later.startswith(_BASE) else None)


def _records_end(handle: BinaryIO, size: int) -> int:
    """Where the log's whole records end, of its ``size`` bytes: before the padding (trailing zeros), a line
    without its newline, and a last line holding a zero byte (blocks of a torn record that reached the disk
    before a crash, around others that did not). Only the last record can be torn: ``"sync"`` (the only mode
    that pads) writes a record only once the one before is synced."""
    position = size
    while position > 0:  # the padding
        step = min(_SCAN_BLOCK, position)
        handle.seek(position - step)
        kept = len(handle.read(step).rstrip(b"\0"))
        position -= step - kept
        if kept:
            break
    last = _find_back(handle, b"\n", position)
    if last < 0:
        return 0
    line = _find_back(handle, b"\n", last) + 1
    handle.seek(line)
    position = line
    while position < last:
        step = min(_SCAN_BLOCK, last - position)
        if b"\0" in handle.read(step):
            return line
        position += step
    return last + 1


def _find_back(handle: BinaryIO, byte: bytes, before: int) -> int:
    """The position of the last ``byte`` before ``before``; -1 when there is none."""
    position = before
    while position > 0:
        step = min(_SCAN_BLOCK, position)
        position -= step
        handle.seek(position)
        at = handle.read(step).rfind(byte)
        if at >= 0:
            return position + at
    return -1


def _parse(run_id: str, content: bytes, offset: int) -> _Log:
    """Records in ``content`` (from byte ``offset`` of the log) applied in order; a torn last line ignored."""
    log = _Log()
    lines = content.split(b"\n")
    # The last element is b"" after a complete final line, else a line torn by a crash: ignored.
    for number, raw in enumerate(lines[:-1], start=1):
        try:
            record = json.loads(raw)
            if "trace" in record and "state" not in record:  # the trace a compaction moved out of the way
                trace = record["trace"]
                if not isinstance(trace, list):
                    raise TypeError("a trace record holds a list of events")
                log.events.extend(trace)
                continue
            state, new, gone, events = record["state"], record["new"], record["gone"], record["events"]
            if not isinstance(new, dict) or not isinstance(gone, list) or not isinstance(events, list):
                raise TypeError("a record's new, gone and events are an object and two lists")
            step = state["step"] if isinstance(state, dict) else None
            if not isinstance(step, int):
                raise TypeError("a record's state has no superstep number")
        except (ValueError, TypeError, KeyError) as exc:
            where = f"line {number}" if offset == 0 else f"line {number} after byte {offset:,}"
            raise CorruptRunStateError(f"run {run_id!r}: {where} of its checkpoint log is damaged: {exc}",
                                       run_id=run_id) from None
        if record.get("base") is True:
            log.parts = dict(new)  # a snapshot holds every live part: what an earlier process left is not
        else:
            for key in gone:
                log.parts.pop(key, None)
            log.parts.update(new)
        log.all_parts.update(new)
        log.state = state
        log.events.extend(events)
        if record.get("kept") is True:
            log.kept[step] = state  # a superstep saved twice (re-run after a crash) is kept as last saved
            log.history_ended = False
        else:
            log.history_ended = True
    if log.state is None:
        raise _not_found(run_id)
    return log


@dataclass(slots=True)
class _Log:
    """A run's log read back: the latest state (without parts), the live parts, every event in order; and for
    history, every part the log holds and the state of each kept checkpoint by superstep."""

    state: Any = None
    parts: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    all_parts: dict[str, Any] = field(default_factory=dict)
    kept: dict[int, Any] = field(default_factory=dict)
    #: The last record is not a kept checkpoint (``until_end`` dropped the history, or no policy wrote it).
    history_ended: bool = False

    def kept_steps(self, policy: HistoryPolicy) -> dict[int, Any]:
        """The kept checkpoints the policy still keeps (the log drops the others when it is compacted)."""
        if self.history_ended:
            return {}
        keep = policy.keep(list(self.kept))
        return {step: state for step, state in self.kept.items() if step in keep}
