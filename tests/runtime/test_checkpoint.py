"""Both runtime checkpointers pass the shared conformance suite; the file one also survives crashes mid-write."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import Engine, RunState
from runtime._sqlite import SCHEMA_VERSION
from runtime.checkpoint import FileCheckpointer, HistoryPolicy, InMemoryCheckpointer, SqliteCheckpointer
from runtime.engine import EngineOptions
from runtime.errors import CheckpointNotFoundError, CorruptRunStateError
from runtime.state import SequentialIds
from runtime.testing.checkpointer_conformance import (
    CheckpointerConformance,
    _registry,
    collecting_workflow,
    sample_events,
    sample_run_state,
)


class TestInMemoryCheckpointer(CheckpointerConformance):
    def make_checkpointer(self) -> InMemoryCheckpointer:
        return InMemoryCheckpointer()

    def make_history_checkpointer(self, policy: HistoryPolicy) -> InMemoryCheckpointer:
        return InMemoryCheckpointer(history=policy)


class TestFileCheckpointer(CheckpointerConformance):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path / "checkpoints"

    def make_checkpointer(self) -> FileCheckpointer:
        return FileCheckpointer(self.directory)

    def make_history_checkpointer(self, policy: HistoryPolicy) -> FileCheckpointer:
        return FileCheckpointer(self.directory, history=policy)

    def reopen(self, checkpointer: object) -> FileCheckpointer:
        return FileCheckpointer(self.directory, history=getattr(checkpointer, "history_policy", None))


class TestDurableFileCheckpointer(TestFileCheckpointer):
    def make_checkpointer(self) -> FileCheckpointer:
        return FileCheckpointer(self.directory, durable=True)

    def make_history_checkpointer(self, policy: HistoryPolicy) -> FileCheckpointer:
        return FileCheckpointer(self.directory, durable=True, history=policy)

    def reopen(self, checkpointer: object) -> FileCheckpointer:
        return FileCheckpointer(self.directory, durable=True, history=getattr(checkpointer, "history_policy", None))


class TestSlightlyPaddedFileCheckpointer(TestDurableFileCheckpointer):
    """Padding to the next page only: many saves extend the log, the others overwrite what is left of it."""

    def make_checkpointer(self) -> FileCheckpointer:
        return FileCheckpointer(self.directory, durable=True, preallocate=200)

    def make_history_checkpointer(self, policy: HistoryPolicy) -> FileCheckpointer:
        return FileCheckpointer(self.directory, durable=True, preallocate=200, history=policy)


class TestSqliteCheckpointer(CheckpointerConformance):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path
        self.opened: list[SqliteCheckpointer] = []

    def make_checkpointer(self) -> SqliteCheckpointer:
        checkpointer = SqliteCheckpointer(self.directory / f"runs{len(self.opened)}.sqlite3")
        self.opened.append(checkpointer)
        return checkpointer

    def make_history_checkpointer(self, policy: HistoryPolicy) -> SqliteCheckpointer:
        checkpointer = SqliteCheckpointer(self.directory / f"history{len(self.opened)}.sqlite3", history=policy)
        self.opened.append(checkpointer)
        return checkpointer

    def reopen(self, checkpointer: object) -> SqliteCheckpointer:
        assert isinstance(checkpointer, SqliteCheckpointer)
        again = SqliteCheckpointer(checkpointer.path, history=checkpointer.history_policy)
        self.opened.append(again)
        return again


class TestNonDurableSqliteCheckpointer(TestSqliteCheckpointer):
    def make_checkpointer(self) -> SqliteCheckpointer:
        checkpointer = SqliteCheckpointer(self.directory / f"fast{len(self.opened)}.sqlite3", durable=False)
        self.opened.append(checkpointer)
        return checkpointer


def test_file_saves_append_one_line_each_leaving_no_temporary_files(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path)
    for step in range(5):
        cp.save(sample_run_state(step=step))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run_0000000000001.log"]
    lines = (tmp_path / "run_0000000000001.log").read_bytes().splitlines()
    assert [json.loads(line)["state"]["step"] for line in lines] == [0, 1, 2, 3, 4]
    # The item snapshot and the scope input are write-once parts: in the first line only.
    assert [sorted(json.loads(line)["new"]) for line in lines] == [["input:root", "items:act_3"]] + [[]] * 4


def test_a_torn_last_record_loses_its_state_and_events_together(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path)
    rs = sample_run_state(step=1)
    rs.trace_seq = 3
    cp.save(rs, sample_events(rs.run_id, 0, 3))
    with open(cp.log_path(rs.run_id), "ab") as handle:
        handle.write(b'{"state": {"step": 2}, "new": {}, "gone": [], "events": [{"seq": 3, "kind": "node_sta')
    assert cp.load(rs.run_id).step == 1
    assert [e.seq for e in cp.load_events(rs.run_id)] == [0, 1, 2]
    # The resumed run redoes that superstep: its save cuts the torn tail off and appends after the last whole line.
    rs.step, rs.trace_seq = 2, 5
    again = FileCheckpointer(tmp_path)
    again.save(rs, sample_events(rs.run_id, 3, 2))
    rs.step = 3
    again.save(rs)
    assert cp.load(rs.run_id).step == 3
    assert [e.seq for e in cp.load_events(rs.run_id)] == [0, 1, 2, 3, 4]


def test_a_damaged_line_before_the_last_is_corrupt_not_skipped(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path)
    rs = sample_run_state()
    for step in range(3):
        rs.step = step
        cp.save(rs)
    path = cp.log_path(rs.run_id)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"{oops\n" + lines[2])
    with pytest.raises(CorruptRunStateError, match="line 2 of its checkpoint log is damaged"):
        cp.load(rs.run_id)


def test_a_lost_part_makes_the_checkpoint_corrupt(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path)
    rs = sample_run_state()
    cp.save(rs)
    cp.save(rs)
    path = cp.log_path(rs.run_id)
    first, second = path.read_bytes().splitlines(keepends=True)
    record = json.loads(first)
    del record["new"]["items:act_3"]
    path.write_bytes(json.dumps(record).encode() + b"\n" + second)
    with pytest.raises(CorruptRunStateError) as caught:
        cp.load(rs.run_id)
    assert caught.value.details["part"] == "items:act_3"


def test_the_log_is_compacted_when_it_doubles_keeping_state_parts_and_events(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path, compact_min_bytes=0)
    rs = sample_run_state()
    for step in range(40):
        rs.step, rs.trace_seq = step, step + 1
        cp.save(rs, sample_events(rs.run_id, step, 1))
    assert 2 <= cp.compactions <= 15  # geometric: the log must double between rewrites (O(1) per save amortized)
    lines = cp.log_path(rs.run_id).read_bytes().splitlines()
    assert len(lines) < 40
    assert cp.load(rs.run_id).step == 39
    assert [e.seq for e in FileCheckpointer(tmp_path).load_events(rs.run_id)] == list(range(40))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run_0000000000001.log"]


def test_a_save_writes_what_changed_not_what_the_lists_hold(tmp_path: Path) -> None:
    from runtime.testing.checkpointer_conformance import collecting_workflow

    sizes: list[int] = []
    cp = FileCheckpointer(tmp_path, compact_min_bytes=1 << 40)

    def watch(run_state: object, _events: object) -> None:
        sizes.append(cp.log_path(run_state.run_id).stat().st_size)  # type: ignore[attr-defined]

    from runtime import Engine
    from runtime.state import SequentialIds
    from runtime.testing.checkpointer_conformance import _registry

    engine = Engine(_registry(), EngineOptions(checkpointer=cp, ids=SequentialIds(), on_superstep=watch, keep_trace=0))
    result = engine.run(collecting_workflow(), {"xs": list(range(4000))})
    assert result.status == "completed" and len(result.output["doubled"]) == 4000
    growth = [b - a for a, b in zip(sizes, sizes[1:], strict=False)]
    early, late = growth[10:60], growth[-60:-10]
    # Each superstep appends about the same number of bytes at item 100 and at item 3,900 (full 128-element
    # chunks come and go in both stretches), where rewriting the lists would grow 40-fold.
    assert sum(late) < 1.5 * sum(early)


def _snapshot_lines(path: Path) -> int:
    return sum(line.startswith(b'{"base":') for line in path.read_bytes().splitlines())


def test_file_load_from_the_last_snapshot_equals_a_full_replay(tmp_path: Path) -> None:
    """``load`` reads the last snapshot and what follows; ``load_at`` (history) replays the whole log. At every
    superstep of a run that wrote many snapshots, both give the live state."""
    cp = FileCheckpointer(tmp_path, history=HistoryPolicy(), snapshot_min_bytes=512, compact_min_bytes=1 << 40)
    checked: list[int] = []

    def check(run_state: RunState, _events: object) -> None:
        live = run_state.model_dump(mode="json")
        assert cp.load(run_state.run_id).model_dump(mode="json") == live
        assert cp.load_at(run_state.run_id, run_state.step).model_dump(mode="json") == live
        checked.append(run_state.step)

    engine = Engine(_registry(), EngineOptions(
        checkpointer=cp, ids=SequentialIds(), on_superstep=check, keep_trace=None))
    result = engine.run(collecting_workflow(), {"xs": list(range(300))})
    assert result.status == "completed" and len(checked) > 75
    assert _snapshot_lines(cp.log_path(result.run_id)) > 10
    again = FileCheckpointer(tmp_path, history=HistoryPolicy())
    assert again.load(result.run_id) == result.run_state
    assert [e.identity() for e in again.load_events(result.run_id)] == [e.identity() for e in result.trace]


def test_a_reopened_file_checkpointer_appends_a_snapshot_instead_of_rewriting_the_log(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path)
    rs = sample_run_state()
    for step in range(5):
        rs.step, rs.trace_seq = step, step + 1
        cp.save(rs, sample_events(rs.run_id, step, 1))
    before = cp.log_path(rs.run_id).read_bytes()
    again = FileCheckpointer(tmp_path)
    rs.step, rs.trace_seq = 5, 6
    again.save(rs, sample_events(rs.run_id, 5, 1))
    after = cp.log_path(rs.run_id).read_bytes()
    assert after.startswith(before) and again.compactions == 0
    assert after[len(before):].startswith(b'{"base":')
    assert FileCheckpointer(tmp_path).load(rs.run_id).step == 5
    assert [e.seq for e in FileCheckpointer(tmp_path).load_events(rs.run_id)] == list(range(6))


@functools.cache
def _snapshotted_log() -> tuple[bytes, list[tuple[int, dict[str, Any], list[Any]]]]:
    """A run's log with a snapshot every few records, and per save: the log's size after it, the state saved,
    the trace so far."""
    with tempfile.TemporaryDirectory() as tmp:
        cp = FileCheckpointer(tmp, snapshot_min_bytes=700, compact_min_bytes=1 << 40)
        saves: list[tuple[int, dict[str, Any], list[Any]]] = []
        trace: list[Any] = []

        def record(run_state: RunState, events: Any) -> None:
            trace.extend(e.identity() for e in events)
            saves.append((cp.log_path(run_state.run_id).stat().st_size, run_state.model_dump(mode="json"),
                          list(trace)))

        engine = Engine(_registry(), EngineOptions(checkpointer=cp, ids=SequentialIds(), on_superstep=record))
        result = engine.run(collecting_workflow(), {"xs": list(range(60))}, run_id="run_torn")
        assert result.status == "completed"
        return cp.log_path("run_torn").read_bytes(), saves


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_torn_write_after_a_snapshot_loses_nothing_committed(data: st.DataObject) -> None:
    """A crash may cut the log anywhere (a torn last record, snapshot or not): a new checkpointer loads the last
    whole record's state and trace, and its next save goes on from there."""
    log, saves = _snapshotted_log()
    assert _snapshot_lines_of(log) > 3
    cut = data.draw(st.integers(0, len(log)))
    committed = [save for save in saves if save[0] <= cut]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run_torn.log"
        path.write_bytes(log[:cut])
        cp = FileCheckpointer(tmp)
        if not committed:
            with pytest.raises(CheckpointNotFoundError):
                cp.load("run_torn")
            return
        _size, state, trace = committed[-1]
        loaded = cp.load("run_torn")
        assert loaded.model_dump(mode="json") == state
        assert [e.identity() for e in cp.load_events("run_torn")] == trace
        loaded.step += 1
        cp.save(loaded)
        again = FileCheckpointer(tmp)
        assert again.load("run_torn").step == loaded.step
        assert [e.identity() for e in again.load_events("run_torn")] == trace
        assert path.read_bytes().startswith(log[:committed[-1][0]])


def _snapshot_lines_of(log: bytes) -> int:
    return sum(line.startswith(b'{"base":') for line in log.splitlines())


@pytest.mark.parametrize("run_id", ["../escape", "a/b", ".hidden", "", "x" * 300, "a\x00b"])
def test_file_checkpointer_refuses_run_ids_that_are_not_plain_file_names(tmp_path: Path, run_id: str) -> None:
    cp = FileCheckpointer(tmp_path)
    with pytest.raises(ValueError):
        cp.save(sample_run_state(run_id))
    assert os.listdir(tmp_path) == []


def test_in_memory_checkpointer_counts_saves() -> None:
    cp = InMemoryCheckpointer()
    cp.save(sample_run_state())
    cp.save(sample_run_state())
    assert cp.saves == 2
    assert cp.run_ids() == ["run_0000000000001"]


def test_file_history_reuses_the_logs_parts_so_it_costs_what_changed(tmp_path: Path) -> None:
    """A kept checkpoint is a line the log writes anyway: history must not store a whole state per superstep."""
    from runtime import Engine
    from runtime.state import SequentialIds
    from runtime.testing.checkpointer_conformance import _registry, collecting_workflow

    sizes = {}
    whole_states = 0

    def measure(run_state: RunState, _events: object) -> None:
        nonlocal whole_states
        whole_states += len(run_state.to_json())

    for name, policy in (("none", None), ("all", HistoryPolicy())):
        directory = tmp_path / name
        cp = FileCheckpointer(directory, history=policy)
        result = Engine(registry=_registry(), options=EngineOptions(checkpointer=cp, ids=SequentialIds(),
                        on_superstep=measure if policy else None)).run(collecting_workflow(), {"xs": list(range(1200))})
        assert result.status == "completed"
        sizes[name] = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
        if policy is not None:
            kept = cp.history(result.run_id)
            assert len(kept) == result.run_state.step + 1
            middle = kept[len(kept) // 2].step
            assert cp.load_at(result.run_id, middle).step == middle
    # A whole state per kept checkpoint costs whole_states bytes; the log's lines cost a small share of that.
    assert sizes["all"] - sizes["none"] < whole_states / 4


_V1_SCHEMA = (
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, state BLOB NOT NULL) WITHOUT ROWID",
    "CREATE TABLE parts (run_id TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, "
    "PRIMARY KEY (run_id, key)) WITHOUT ROWID",
    "CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, event BLOB NOT NULL, "
    "PRIMARY KEY (run_id, seq)) WITHOUT ROWID",
)


def test_a_version_1_sqlite_file_is_converted_on_open_keeping_states_parts_and_events(tmp_path: Path) -> None:
    current = tmp_path / "current.sqlite3"
    rs = sample_run_state()
    rs.trace_seq = 7
    with SqliteCheckpointer(current) as cp:
        cp.save(rs, sample_events(rs.run_id, 0, 4))
        cp.save(rs, sample_events(rs.run_id, 4, 3))
        expected_state, expected_events = cp.load(rs.run_id), cp.load_events(rs.run_id)
    # The same content in the version 1 layout: one event per row, WITHOUT ROWID tables, user_version 0.
    old = tmp_path / "old.sqlite3"
    db = sqlite3.connect(old)
    for statement in _V1_SCHEMA:
        db.execute(statement)
    db.execute("ATTACH DATABASE ? AS current", (str(current),))
    db.execute("INSERT INTO runs SELECT run_id, state FROM current.runs")
    db.execute("INSERT INTO parts SELECT run_id, key, value FROM current.parts")
    saves = db.execute("SELECT r.run_id, e.events FROM current.events e JOIN current.runs r ON e.id >> 32 = r.rowid "
                       "ORDER BY e.id").fetchall()
    assert len(saves) == 2
    for run_id, saved in saves:
        db.executemany("INSERT INTO events VALUES (?, ?, ?)",
                       [(run_id, event["seq"], json.dumps(event).encode()) for event in json.loads(saved)])
    db.commit()
    db.close()

    with SqliteCheckpointer(old) as converted:
        assert converted.load(rs.run_id).model_dump(mode="json") == expected_state.model_dump(mode="json")
        assert [e.to_dict() for e in converted.load_events(rs.run_id)] == [e.to_dict() for e in expected_events]
        converted.save(rs, sample_events(rs.run_id, 7, 1))
        assert [e.seq for e in converted.load_events(rs.run_id)] == list(range(8))
    db = sqlite3.connect(old)
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert {row[1] for row in db.execute("PRAGMA table_info(events)")} == {"id", "events"}
    db.close()


def test_sqlite_events_saved_again_under_their_seq_replace_the_earlier_ones(tmp_path: Path) -> None:
    rs = sample_run_state()
    rs.trace_seq = 5
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as cp:
        cp.save(rs, sample_events(rs.run_id, 0, 5))
        redone = [replace(event, label="again") for event in sample_events(rs.run_id, 3, 2)]
        cp.save(rs, redone)  # a superstep re-run after a crash saves its events again
        loaded = cp.load_events(rs.run_id)
    assert [(e.seq, e.label) for e in loaded] == [(0, "ok"), (1, "ok"), (2, "ok"), (3, "again"), (4, "again")]


@pytest.mark.parametrize("keep_last", [None, 3], ids=["all", "last 3"])
def test_in_memory_history_asks_what_to_keep_only_when_the_policy_can_drop_one(keep_last: int | None) -> None:
    """The in-memory store's ``all`` history must not walk every kept checkpoint at each save (quadratic)."""
    from runtime import Engine
    from runtime.state import SequentialIds
    from runtime.testing.checkpointer_conformance import _registry, collecting_workflow

    asked: list[int] = []

    class NotingPolicy(HistoryPolicy):
        """The real policy; it only notes how many kept steps each save hands it."""

        def keep(self, steps: Sequence[int]) -> set[int]:
            asked.append(len(steps))
            return super().keep(steps)

    cp = InMemoryCheckpointer(history=NotingPolicy(keep_last=keep_last))
    result = Engine(registry=_registry(), options=EngineOptions(checkpointer=cp, ids=SequentialIds())).run(
        collecting_workflow(), {"xs": list(range(40))})
    assert result.status == "completed"
    assert len(cp.history(result.run_id)) == (result.run_state.step + 1 if keep_last is None else 3)
    assert (asked == []) == (keep_last is None)
    assert max(asked, default=0) <= 4


def test_a_sqlite_checkpointer_that_loaded_a_run_does_not_rewrite_its_parts_at_the_next_save(tmp_path: Path) -> None:
    """A resume's first save costs what changed, as every other save: the load tells the checkpointer which parts
    are stored when they are exactly the ones the state names."""
    path = tmp_path / "runs.sqlite3"
    with SqliteCheckpointer(path) as first:
        state = sample_run_state()
        first.save(state)
    with SqliteCheckpointer(path) as again:
        loaded = again.load(state.run_id)
        loaded.step += 1
        before = again._db.total_changes
        again.save(loaded)
        assert again._db.total_changes - before == 1  # the runs row; the item and input parts stay as stored
        assert again.load(state.run_id).model_dump(mode="json") == loaded.model_dump(mode="json")
    # A part no state names (as a kept checkpoint's would be) leaves the first save to sweep it.
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO parts (run_id, key, value) VALUES (?, 'items:act_gone', '[]')", (state.run_id,))
    with SqliteCheckpointer(path) as third:
        loaded = third.load(state.run_id)
        third.save(loaded)
    with sqlite3.connect(path) as db:
        keys = {key for (key,) in db.execute("SELECT key FROM parts WHERE run_id = ?", (state.run_id,))}
    assert "items:act_gone" not in keys and keys
