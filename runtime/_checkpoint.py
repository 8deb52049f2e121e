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
from typing import Any, Protocol, runtime_checkable

import pydantic_core

from runtime._errors import CheckpointNotFoundError, CorruptRunStateError
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
                self._events.setdefault(run_id, []).extend(events)
            if policy is not None:
                if policy.ends(run_state):
                    self._history.pop(run_id, None)
                else:
                    kept = self._history.setdefault(run_id, {})
                    kept[run_state.step] = (CheckpointInfo.of(run_state), snapshot)
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


class FileCheckpointer:
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

    ``durable=True`` fsyncs the log once per save (one fsync per superstep;
    the directory too when a log is created or replaced), which survives power
    loss, not just a kill. The log is compacted (rewritten as one line of the
    latest state, its live parts and every event, then renamed over the old
    one) when it has grown to ``compact_factor`` times its size after the last
    compaction (and at least ``compact_min_bytes``), so compaction costs O(1)
    per save amortized, and when a new checkpointer first saves a run another
    one wrote (it cannot know which stored parts are still live).

    One process writes a run's log at a time.

    With a ``HistoryPolicy``, each save also writes the whole state (items
    included) to ``<run_id>.history/<step>-<attempt>-<trace_seq>-<status>.json``:
    simple, but each kept checkpoint costs the full state; ``SqliteCheckpointer``
    shares the write-once parts between them.
    """

    def __init__(self, directory: str | os.PathLike[str], *, durable: bool = False,
                 compact_factor: float = 2.0, compact_min_bytes: int = 1 << 20,
                 history: HistoryPolicy | None = None) -> None:
        self.history_policy = history
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.durable = durable
        self.compact_factor = compact_factor
        self.compact_min_bytes = compact_min_bytes
        self._lock = threading.Lock()
        self._counter = 0
        self._ledgers: dict[str, PartLedger] = {}
        self._sizes: dict[str, tuple[int, int]] = {}  # per run: (log size now, size after the last compaction)
        self.saves = 0
        self.compactions = 0

    def log_path(self, run_id: str) -> Path:
        if not isinstance(run_id, str) or not _SAFE_RUN_ID.fullmatch(run_id) or ".." in run_id:
            raise ValueError(f"run id {run_id!r} cannot name a checkpoint file")
        return self.directory / f"{run_id}.log"

    def history_path(self, run_id: str) -> Path:
        return self.log_path(run_id).with_suffix(".history")

    def _kept(self, run_id: str) -> dict[int, tuple[CheckpointInfo, Path]]:
        found: dict[int, tuple[CheckpointInfo, Path]] = {}
        folder = self.history_path(run_id)
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return found
        for name in names:
            fields = name.removesuffix(".json").split("-", 3)
            if not name.endswith(".json") or len(fields) != 4 or not all(f.isdigit() for f in fields[:3]):
                continue  # a temporary file of an interrupted write
            step, attempt, trace_seq = (int(f) for f in fields[:3])
            found[step] = (CheckpointInfo(step, fields[3], attempt, trace_seq), folder / name)
        return found

    def _save_history(self, run_state: RunState, policy: HistoryPolicy) -> None:
        run_id = run_state.run_id
        folder = self.history_path(run_id)
        if policy.ends(run_state):
            shutil.rmtree(folder, ignore_errors=True)
            return
        folder.mkdir(exist_ok=True)
        kept = self._kept(run_id)
        info = CheckpointInfo.of(run_state)
        name = f"{info.step}-{info.attempt}-{info.trace_seq}-{info.status}.json"
        self._replace(folder / name, run_state.to_json().encode("utf-8"))
        previous = kept.get(info.step)
        if previous is not None and previous[1].name != name:
            previous[1].unlink(missing_ok=True)
        kept[info.step] = (info, folder / name)
        for step in set(kept) - policy.keep(list(kept)):
            kept[step][1].unlink(missing_ok=True)

    def history(self, run_id: str) -> list[CheckpointInfo]:
        kept = self._kept(run_id)
        return [kept[step][0] for step in sorted(kept)]

    def load_at(self, run_id: str, step: int) -> RunState:
        found = self._kept(run_id).get(step)
        if found is None:
            raise _no_history(run_id, step)
        try:
            return RunState.from_json(found[1].read_bytes())
        except FileNotFoundError:
            raise _no_history(run_id, step) from None

    @staticmethod
    def _sync_directory(directory: Path) -> None:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @staticmethod
    def _record(data: Any, new: Mapping[str, Any], gone: Sequence[str], events: Sequence[dict[str, Any]]) -> bytes:
        return pydantic_core.to_json({"state": data, "new": new, "gone": list(gone), "events": list(events)}) + b"\n"

    # -- writing ---------------------------------------------------------------------

    def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        run_id = run_state.run_id
        path = self.log_path(run_id)
        with self._lock:
            ledger = self._ledgers.get(run_id) or PartLedger()
            delta = run_state.checkpoint_delta(ledger)
            line = self._record(delta.data, delta.new, delta.gone, line_events(events))
            if delta.fresh:
                # What an earlier checkpointer stored of this run is unknown here: start the log over from
                # this state, keeping the trace it holds (delta.new has every live part, the ledger being empty).
                kept = self._events_kept(run_id, path)
                size = self._replace(path, self._record(delta.data, delta.new, (), [*kept, *line_events(events)]))
                self._sizes[run_id] = (size, size)
            else:
                size, compacted = self._sizes[run_id]
                size = self._append(path, line, size)
                self._sizes[run_id] = (size, compacted)
                if size >= max(self.compact_min_bytes, self.compact_factor * compacted):
                    self._compact(run_id, path)
            ledger.apply(delta)
            self._ledgers[run_id] = ledger
            if self.history_policy is not None:
                self._save_history(run_state, self.history_policy)
            self.saves += 1

    def _append(self, path: Path, line: bytes, size: int) -> int:
        """Append one record at ``size`` (cutting off a torn tail a failed write left); the new size."""
        with open(path, "r+b") as handle:
            handle.seek(size)
            handle.truncate()
            try:
                handle.write(line)
                handle.flush()
                if self.durable:
                    os.fsync(handle.fileno())
            except BaseException:
                handle.seek(size)
                handle.truncate()
                raise
        return size + len(line)

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

    def _events_kept(self, run_id: str, path: Path) -> list[dict[str, Any]]:
        try:
            return self._read(run_id, path).events
        except CheckpointNotFoundError:  # no log, or only a torn first line
            return []

    def _compact(self, run_id: str, path: Path) -> None:
        log = self._read(run_id, path)
        assert log.state is not None  # we just appended one
        size = self._replace(path, self._record(log.state, log.parts, (), log.events))
        self._sizes[run_id] = (size, size)
        self.compactions += 1

    # -- reading ---------------------------------------------------------------------

    def _read(self, run_id: str, path: Path) -> _Log:
        try:
            content = path.read_bytes()
        except FileNotFoundError:
            raise _not_found(run_id) from None
        log = _Log()
        lines = content.split(b"\n")
        # The last element is b"" after a complete final line, else a line torn by a crash: ignored.
        for number, raw in enumerate(lines[:-1], start=1):
            try:
                record = json.loads(raw)
                state, new, gone, events = record["state"], record["new"], record["gone"], record["events"]
                if not isinstance(new, dict) or not isinstance(gone, list) or not isinstance(events, list):
                    raise TypeError("a record's new, gone and events are an object and two lists")
            except (ValueError, TypeError, KeyError) as exc:
                raise CorruptRunStateError(f"run {run_id!r}: line {number} of its checkpoint log is damaged: "
                                           f"{exc}", run_id=run_id) from None
            for key in gone:
                log.parts.pop(key, None)
            log.parts.update(new)
            log.state = state
            log.events.extend(events)
        if log.state is None:
            raise _not_found(run_id)
        return log

    def load(self, run_id: str) -> RunState:
        log = self._read(run_id, self.log_path(run_id))
        return RunState.join_parts(log.state, log.parts)

    def load_events(self, run_id: str) -> list[TraceEvent]:
        try:
            log = self._read(run_id, self.log_path(run_id))
        except CheckpointNotFoundError:
            return []
        return [TraceEvent.from_dict(event) for event in log.events]

    def delete(self, run_id: str) -> None:
        path = self.log_path(run_id)
        with self._lock:
            path.unlink(missing_ok=True)
            shutil.rmtree(self.history_path(run_id), ignore_errors=True)
            self._ledgers.pop(run_id, None)
            self._sizes.pop(run_id, None)

    def run_ids(self) -> list[str]:
        return sorted(p.name[: -len(".log")] for p in self.directory.glob("*.log") if not p.name.startswith("."))


def line_events(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    return [event.to_dict() for event in events]


@dataclass(slots=True)
class _Log:
    """A run's log read back: the latest state (without parts), the live parts, every event in order."""

    state: Any = None
    parts: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
