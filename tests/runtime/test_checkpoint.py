"""Both runtime checkpointers pass the shared conformance suite; the file one also survives crashes mid-write."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runtime import FileCheckpointer, HistoryPolicy, InMemoryCheckpointer, SqliteCheckpointer
from runtime.testing.checkpointer_conformance import CheckpointerConformance, sample_events, sample_run_state


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
        self.policy = policy
        return FileCheckpointer(self.directory, history=policy)

    def reopen(self, checkpointer: object) -> FileCheckpointer:
        return FileCheckpointer(self.directory, history=getattr(checkpointer, "history_policy", None))


class TestDurableFileCheckpointer(TestFileCheckpointer):
    def make_checkpointer(self) -> FileCheckpointer:
        return FileCheckpointer(self.directory, durable=True)


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


def test_file_state_is_replaced_atomically_leaving_no_temporary_files(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path)
    for step in range(5):
        cp.save(sample_run_state(step=step))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run_0000000000001.json"]
    assert json.loads((tmp_path / "run_0000000000001.json").read_text())["step"] == 4


def test_torn_event_line_from_a_crash_is_ignored(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path)
    rs = sample_run_state()
    rs.trace_seq = 3
    cp.save(rs, sample_events(rs.run_id, 0, 3))
    with open(cp.events_path(rs.run_id), "a", encoding="utf-8") as handle:
        handle.write('{"seq": 3, "kind": "node_sta')
    assert [e.seq for e in cp.load_events(rs.run_id)] == [0, 1, 2]


def test_events_of_a_superstep_lost_with_its_state_are_replaced_by_the_rerun(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path)
    rs = sample_run_state()
    rs.trace_seq = 2
    cp.save(rs, sample_events(rs.run_id, 0, 2))
    # A crash after appending the next superstep's events but before replacing the state:
    lost = [e.to_dict() | {"node_id": "lost"} for e in sample_events(rs.run_id, 2, 2)]
    with open(cp.events_path(rs.run_id), "a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(e) + "\n" for e in lost)
    assert [e.seq for e in cp.load_events(rs.run_id)] == [0, 1]
    # The resumed run redoes that superstep and saves it properly.
    rs.trace_seq = 4
    cp.save(rs, sample_events(rs.run_id, 2, 2))
    events = cp.load_events(rs.run_id)
    assert [e.seq for e in events] == [0, 1, 2, 3]
    assert all(e.node_id == "ask" for e in events)


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
