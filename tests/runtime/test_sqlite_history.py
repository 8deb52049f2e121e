"""SqliteCheckpointer's history rows: what they store, what pruning keeps, and older files converted on open."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from runtime import Engine, RunState
from runtime._sqlite import SCHEMA_VERSION
from runtime.checkpoint import HistoryPolicy, SqliteCheckpointer
from runtime.engine import EngineOptions
from runtime.state import SequentialIds
from runtime.testing.checkpointer_conformance import _registry, collecting_workflow, greeting_workflow
from tests.runtime.engine_helpers import nested_capture, registry


def _rows(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def test_a_history_row_holds_nothing_that_grows_besides_its_state(tmp_path: Path) -> None:
    """History ``all``: a kept row's columns other than ``state`` (itself the size of the live structure) do not
    grow with the collected lists' chunks. A ``part_keys`` list per row did (a key per 128 items of every list),
    so a long run's history was quadratic in bytes. Pruning reads the keys from the state instead."""

    def outside_state(size: int) -> set[int]:
        path = tmp_path / f"{size}.sqlite3"
        with SqliteCheckpointer(path, history=HistoryPolicy()) as cp:
            result = Engine(registry=_registry(), options=EngineOptions(checkpointer=cp, ids=SequentialIds())).run(
                collecting_workflow(), {"xs": list(range(size))})
        assert result.status == "completed"
        db = sqlite3.connect(path)
        cursor = db.execute("SELECT * FROM history")
        names = [column[0] for column in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor]
        db.close()
        assert len(rows) > size // 4  # one per superstep
        return {sum(len(value) if isinstance(value, bytes | str) else len(str(value))
                    for name, value in row.items() if name != "state") for row in rows}

    sizes = outside_state(130) | outside_state(1300)  # 2 chunks of 128 per list, then 11
    assert max(sizes) - min(sizes) < 12, sorted(sizes)  # the digits of step and trace_seq


def _needed(state: bytes) -> set[str]:
    return set(RunState.parts_left_out(json.loads(state)))


@pytest.mark.parametrize("keep_last", [2, 4])
def test_keeping_the_last_n_stores_exactly_the_parts_the_kept_checkpoints_and_the_latest_need(
        tmp_path: Path, keep_last: int) -> None:
    """Nested foreach: each customer's orders are an activation whose items part goes when it ends. After every
    save the stored parts are exactly what the latest state and the kept checkpoints leave out (none missing,
    none left behind), and some part outlives the latest state because a kept checkpoint still needs it."""
    path = tmp_path / "runs.sqlite3"
    outlived: set[str] = set()
    checked: list[int] = []

    def check(run_state: RunState, _events: object) -> None:
        stored = {key for (key,) in _rows(path, "SELECT key FROM parts WHERE run_id = ?", run_state.run_id)}
        (latest,) = _rows(path, "SELECT state FROM runs WHERE run_id = ?", run_state.run_id)
        kept = _rows(path, "SELECT step, state FROM history WHERE run_id = ? ORDER BY step", run_state.run_id)
        assert [step for step, _ in kept] == sorted({*range(run_state.step + 1)})[-keep_last:]
        wanted = _needed(latest[0]).union(*(_needed(state) for _, state in kept))
        assert stored == wanted, f"superstep {run_state.step}"
        outlived.update(stored - _needed(latest[0]))
        checked.append(run_state.step)

    customers = [{"name": f"c{n}", "orders": list(range(n % 3 + 1))} for n in range(8)]
    with SqliteCheckpointer(path, history=HistoryPolicy(keep_last=keep_last)) as cp:
        result = Engine(registry(), EngineOptions(checkpointer=cp, ids=SequentialIds(), on_superstep=check)).run(
            nested_capture(after_inner=True, inner_concurrency=2), {"customers": customers})
        kept_steps = [info.step for info in cp.history(result.run_id)]
        for step in kept_steps:
            assert cp.load_at(result.run_id, step).step == step
    assert result.status == "completed"
    assert len(checked) == result.run_state.step + 1
    assert any(key.startswith("items") for key in outlived), outlived


@pytest.mark.parametrize("policy", [HistoryPolicy(), HistoryPolicy(keep_last=3)], ids=["all", "last 3"])
def test_a_save_reads_kept_checkpoints_only_when_the_policy_can_drop_one_and_their_parts_may_go(
        tmp_path: Path, policy: HistoryPolicy) -> None:
    """With ``all`` nothing is ever dropped, so a save must not read the kept steps back: that made every save
    O(supersteps) and a long run's history quadratic. A bounded policy lists them (at most N + 1). The items,
    the input and the list chunks a dropped checkpoint needed are nearly always still the latest state's, so
    pruning reads the dropped state and the kept ones only when one of its parts is no longer live (here once:
    the foreach's items, when it ends); ``all`` reads no state at all."""
    statements: list[str] = []
    with SqliteCheckpointer(tmp_path / "history.sqlite3", history=policy) as cp:
        cp._db.set_trace_callback(statements.append)
        result = Engine(registry=_registry(), options=EngineOptions(checkpointer=cp, ids=SequentialIds())).run(
            collecting_workflow(), {"xs": list(range(300))})
        cp._db.set_trace_callback(None)
        kept = cp.history(result.run_id)
    assert result.status == "completed"
    assert len(kept) == (result.run_state.step + 1 if policy.keep_last is None else 3)
    listings = [s for s in statements if s.startswith("SELECT step FROM history")]
    assert (len(listings) > 0) == (policy.keep_last is not None)
    reads = [s for s in statements if s.startswith("SELECT state FROM history")]
    if policy.keep_last is None:
        assert reads == []
    else:
        dropped = [s for s in reads if " AND step = " in s]  # the dropped one's, to learn its parts
        assert len(dropped) == result.run_state.step + 1 - 3
        assert len(reads) - len(dropped) == 1, reads


_V2_HISTORY = ("CREATE TABLE history (run_id TEXT NOT NULL, step INTEGER NOT NULL, status TEXT NOT NULL, "
               "attempt INTEGER NOT NULL, trace_seq INTEGER NOT NULL, state BLOB NOT NULL, part_keys BLOB NOT NULL, "
               "PRIMARY KEY (run_id, step)) WITHOUT ROWID")


def _as_version_2(path: Path) -> None:
    """Rewrite a current file's history in the version 2 layout: each row with its ``part_keys`` list."""
    db = sqlite3.connect(path)
    rows = db.execute("SELECT run_id, step, status, attempt, trace_seq, state FROM history").fetchall()
    db.execute("DROP TABLE history")
    db.execute(_V2_HISTORY)
    db.executemany("INSERT INTO history VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [(*row, json.dumps(sorted(_needed(row[5]))).encode()) for row in rows])
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()


def _answer_all(engine: Engine, result: Any) -> Any:
    while result.status == "interrupted":
        pending = next(iter(result.run_state.interrupts.values()))
        result = engine.resume(result.run_state, pending.interrupt_id, {"answer": f"hi {pending.payload['name']}"},
                               workflow=greeting_workflow())
    return result


def test_a_version_2_file_with_history_is_converted_on_open_and_its_runs_resume(tmp_path: Path) -> None:
    policy = HistoryPolicy()
    path = tmp_path / "runs.sqlite3"
    names = {"names": ["Ada", "Grace", "Edsger", "Barbara", "Alan"]}
    with SqliteCheckpointer(path, history=policy) as cp:
        first = Engine(_registry(), EngineOptions(checkpointer=cp, ids=SequentialIds())).run(greeting_workflow(), names)
        assert first.status == "interrupted"
        kept = cp.history(first.run_id)
        states = {info.step: cp.load_at(first.run_id, info.step).model_dump(mode="json") for info in kept}
    assert len(kept) >= 2
    expected = _answer_all(Engine(registry=_registry(), options=EngineOptions(ids=SequentialIds())), first)
    old = tmp_path / "old.sqlite3"
    shutil.copy(path, old)
    _as_version_2(old)

    with SqliteCheckpointer(old, history=policy) as converted:
        assert converted.history(first.run_id) == kept
        for step, state in states.items():
            assert converted.load_at(first.run_id, step).model_dump(mode="json") == state
        engine = Engine(registry=_registry(), options=EngineOptions(checkpointer=converted, ids=SequentialIds()))
        resumed = _answer_all(engine, _resume_from(engine, converted, first.run_id))
        assert resumed.status == "completed"
        assert resumed.output == expected.output
        after = converted.history(first.run_id)
        assert after[: len(kept)] == kept and after[-1].status == "completed"
        assert converted.load_at(first.run_id, kept[0].step).model_dump(mode="json") == states[kept[0].step]
    assert _rows(old, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert "part_keys" not in {name for (name,) in _rows(old, "SELECT name FROM pragma_table_info('history')")}


def _resume_from(engine: Engine, cp: SqliteCheckpointer, run_id: str) -> Any:
    state = cp.load(run_id)
    pending = next(iter(state.interrupts.values()))
    return engine.resume(state, pending.interrupt_id, {"answer": f"hi {pending.payload['name']}"},
                         workflow=greeting_workflow())


def test_a_file_of_a_newer_schema_is_refused_not_written(tmp_path: Path) -> None:
    path = tmp_path / "newer.sqlite3"
    SqliteCheckpointer(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(ValueError, match=f"schema version {SCHEMA_VERSION + 1}, newer than this Trellis"):
        SqliteCheckpointer(path)
    assert _rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION + 1,)]
