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

import contextlib
import json
import os
import re
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

import pydantic_core

from runtime._errors import CheckpointNotFoundError
from runtime._state import RunState, RunStateSnapshot, parse_part_key
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
    """One directory; per run ``<run_id>.json`` (the state) and ``<run_id>.events.jsonl`` (the trace).

    The state file is replaced atomically (write a temporary file, flush,
    ``os.replace``), so a reader or a process killed mid-write never sees a
    torn state. Events are appended before the state is replaced; a crash in
    between leaves events of a superstep that the resumed run will redo, so
    ``load_events`` keeps, for each ``seq``, the last line written and drops
    those beyond the saved state's ``trace_seq``.
    ``durable=True`` also fsyncs, which survives power loss, not just a kill.

    A foreach's item list longer than ``inline_items`` is written once, to
    ``<run_id>.items/<activation_id>.json``, before the first state that
    needs it, and removed after the first state that no longer does; the
    state file leaves it out (``RunState.split_parts``). So a superstep's save
    does not grow with the size of the collection being iterated. Scope
    inputs and growing lists (collected foreach results, ``append`` targets)
    stay inline in the state file, so a long list is rewritten at every save:
    for long runs use ``SqliteCheckpointer``, which stores them in chunks.

    With a ``HistoryPolicy``, each save also writes the whole state (items
    included) to ``<run_id>.history/<step>-<attempt>-<trace_seq>-<status>.json``:
    simple, but each kept checkpoint costs the full state; ``SqliteCheckpointer``
    shares the write-once parts between them.
    """

    def __init__(self, directory: str | os.PathLike[str], *, durable: bool = False, inline_items: int = 256,
                 history: HistoryPolicy | None = None) -> None:
        self.history_policy = history
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.durable = durable
        self.inline_items = inline_items
        self._lock = threading.Lock()
        self._counter = 0
        self._blobs: dict[str, frozenset[str]] = {}  # per run: the item files the last save left in place

    def _path(self, run_id: str, suffix: str) -> Path:
        if not isinstance(run_id, str) or not _SAFE_RUN_ID.fullmatch(run_id) or ".." in run_id:
            raise ValueError(f"run id {run_id!r} cannot name a checkpoint file")
        return self.directory / f"{run_id}{suffix}"

    def state_path(self, run_id: str) -> Path:
        return self._path(run_id, ".json")

    def events_path(self, run_id: str) -> Path:
        return self._path(run_id, ".events.jsonl")

    def items_path(self, run_id: str) -> Path:
        return self._path(run_id, ".items")

    def history_path(self, run_id: str) -> Path:
        return self._path(run_id, ".history")

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
        self._write_atomically(folder / name, run_state.to_json().encode("utf-8"))
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

    def _write_atomically(self, target: Path, data: bytes) -> None:
        self._counter += 1
        temporary = target.parent / f".{target.name}.{os.getpid()}.{self._counter}.tmp"
        with open(temporary, "wb") as handle:
            self._write(handle, data)
        os.replace(temporary, target)
        if self.durable:
            self._sync_directory(target.parent)

    def _write(self, handle: BinaryIO, data: bytes) -> None:
        handle.write(data)
        handle.flush()
        if self.durable:
            os.fsync(handle.fileno())

    @staticmethod
    def _sync_directory(directory: Path) -> None:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _split(self, run_state: RunState) -> tuple[bytes, dict[str, Any]]:
        """The state file's bytes and the item lists kept out of it, by activation id."""
        def inline(key: str, values: Any) -> bool:
            kind, entry_id = parse_part_key(key)
            return kind != "items" or len(values) <= self.inline_items or not _SAFE_RUN_ID.fullmatch(entry_id)

        data, parts = run_state.split_parts(inline)
        return pydantic_core.to_json(data), {parse_part_key(key)[1]: values for key, values in parts.items()}

    def _store_items(self, run_id: str, apart: dict[str, Any]) -> None:
        folder = self.items_path(run_id)
        for key, values in apart.items():
            target = folder / f"{key}.json"
            if not target.exists():
                if not folder.is_dir():
                    folder.mkdir()
                    if self.durable:
                        self._sync_directory(self.directory)
                self._write_atomically(target, pydantic_core.to_json(values))

    def _drop_items(self, run_id: str, keep: frozenset[str]) -> None:
        """Remove item files no saved state refers to any more (after the state that dropped them is in place)."""
        if self._blobs.get(run_id) == keep:
            return
        folder = self.items_path(run_id)
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            names = []
        for name in names:
            if name.removesuffix(".json") not in keep:
                (folder / name).unlink(missing_ok=True)
        if names and not keep:
            with contextlib.suppress(OSError):
                folder.rmdir()
        self._blobs[run_id] = keep

    def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        run_id = run_state.run_id
        target = self.state_path(run_id)
        data, apart = self._split(run_state)
        with self._lock:
            if events:
                lines = "".join(json.dumps(e.to_dict(), separators=(",", ":")) + "\n" for e in events)
                with open(self.events_path(run_id), "ab") as handle:
                    self._write(handle, lines.encode("utf-8"))
            self._store_items(run_id, apart)
            self._write_atomically(target, data)
            self._drop_items(run_id, frozenset(apart))
            if self.history_policy is not None:
                self._save_history(run_state, self.history_policy)

    def load(self, run_id: str) -> RunState:
        try:
            data = self.state_path(run_id).read_bytes()
        except FileNotFoundError:
            raise _not_found(run_id) from None
        try:
            raw = json.loads(data)
        except ValueError:
            return RunState.from_json(data)  # reports the state as corrupt
        if not isinstance(raw, dict):
            return RunState.from_json(raw)
        parts: dict[str, Any] = {}
        for key in RunState.parts_left_out(raw):
            kind, entry_id = parse_part_key(key)
            if kind == "items" and _SAFE_RUN_ID.fullmatch(entry_id):
                try:
                    parts[key] = json.loads((self.items_path(run_id) / f"{entry_id}.json").read_bytes())
                except (FileNotFoundError, ValueError):
                    pass  # join_parts reports the missing list
        return RunState.join_parts(raw, parts)

    def load_events(self, run_id: str) -> list[TraceEvent]:
        try:
            text = self.events_path(run_id).read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            limit: int | None = self.load(run_id).trace_seq
        except CheckpointNotFoundError:
            limit = None
        by_seq: dict[int, TraceEvent] = {}
        for line in text.splitlines():
            try:
                event = TraceEvent.from_dict(json.loads(line))
            except (ValueError, TypeError):
                continue  # a line torn by a crash mid-append
            if limit is None or event.seq < limit:
                by_seq[event.seq] = event
        return [by_seq[seq] for seq in sorted(by_seq)]

    def delete(self, run_id: str) -> None:
        for path in (self.state_path(run_id), self.events_path(run_id)):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
        shutil.rmtree(self.items_path(run_id), ignore_errors=True)
        shutil.rmtree(self.history_path(run_id), ignore_errors=True)
        with self._lock:
            self._blobs.pop(run_id, None)

    def run_ids(self) -> list[str]:
        return sorted(p.name[: -len(".json")] for p in self.directory.glob("*.json")
                      if not p.name.startswith("."))
