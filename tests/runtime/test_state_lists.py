"""Growing lists (append bindings, collected foreach results): in place in memory, write-once chunks in checkpoints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic_core
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import Engine, RunState, Workflow, WorkflowBuilder
from runtime._parts import CHUNK, GrowList
from runtime.checkpoint import PartLedger
from runtime.engine import EngineOptions
from runtime.errors import CorruptRunStateError
from runtime.state import SequentialIds, TraceEvent, parse_run_state
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import XS_INPUT, registry

LOG = {"type": "object", "properties": {"log": {"type": "array", "default": []},
                                        "copy": {"type": "array"}}}


def tasks() -> TaskRegistry:
    """The engine tests' tasks (``double``...) and ``same``, which hands a list back."""
    reg = registry()

    @reg.task
    def same(values: list[Any]) -> list[Any]:
        return values

    return reg


def collecting(concurrency: int, *, interrupt_at: int | None = None, read_log: bool = False) -> Workflow:
    """Collects results and appends to ``log``; optionally pauses at one item, or reads ``log`` in the body."""
    g = WorkflowBuilder("lists", input_schema=XS_INPUT, state_schema=LOG)
    each = g.foreach("each", "input.xs", max_concurrency=concurrency, results="doubled")
    d = g.use("double", "d", input=[{"target": "x", "path": each.item}],
              output=[{"source": ".", "target": "log", "mode": "append"}])
    g.set_route(each, "loop", d)
    last: Any = d
    if read_log:
        c = g.use("same", "c", input=[{"target": "values", "path": "state.log"}],
                  output=[{"source": ".", "target": "copy"}])
        g.set_route(d, "ok", c)
        last = c
    if interrupt_at is not None:
        gate = g.branch("gate", path=each.index, cases=[{"label": "ask", "op": "equals", "value": interrupt_at}])
        ask = g.interrupt("ask", prompt="go on?", resume_schema={"type": "object"})
        g.chain(last, "ok", gate, "ask", ask, "ok", each)
        g.set_route(gate, "default", each)
    else:
        g.set_route(last, "ok", each)
    g.output("doubled", "state.doubled")
    g.output("log", "state.log")
    return g.build()


class Store:
    """A checkpointer that keeps exactly what ``checkpoint_delta`` hands it, as a real store would."""

    def __init__(self) -> None:
        self.ledger = PartLedger()
        self.parts: dict[str, bytes] = {}
        self.data = b""
        self.saves: list[tuple[int, int, int]] = []  # (data bytes, new parts, gone parts)
        self.dumps: list[dict[str, Any]] = []
        self.splits: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        delta = run_state.checkpoint_delta(self.ledger)
        assert not set(delta.new) & set(self.parts), "a stored write-once part was handed over again"
        for key in delta.gone:
            del self.parts[key]
        self.parts.update({key: pydantic_core.to_json(value) for key, value in delta.new.items()})
        self.data = pydantic_core.to_json(delta.data)
        self.ledger.apply(delta)
        self.saves.append((len(self.data), len(delta.new), len(delta.gone)))
        self.dumps.append(run_state.model_dump(mode="json"))
        self.splits.append(run_state.split_parts())
        stored = {key: pydantic_core.from_json(value) for key, value in self.parts.items()}
        assert RunState.join_parts(self.data, stored).model_dump(mode="json") == self.dumps[-1]

    def load(self, run_id: str) -> RunState:
        return RunState.join_parts(self.data, {k: pydantic_core.from_json(v) for k, v in self.parts.items()})

    def load_events(self, run_id: str) -> list[TraceEvent]:
        return []

    def delete(self, run_id: str) -> None:
        pass


def run_stored(workflow: Workflow, xs: list[int]) -> tuple[Store, Any]:
    store = Store()
    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=store, ids=SequentialIds()))
    result = eng.run(workflow, {"xs": xs})
    while result.status == "interrupted":
        result = eng.resume(store.load(result.run_id), result.interrupts[0].interrupt_id, {}, workflow=workflow)
    return store, result


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.integers(0, 3 * CHUNK + 5), concurrency=st.integers(1, 6), pause=st.none() | st.floats(0, 1),
       read_log=st.booleans())
def test_join_of_split_and_of_accumulated_deltas_is_the_state_at_every_checkpoint(
        size: int, concurrency: int, pause: float | None, read_log: bool) -> None:
    xs = list(range(size))
    interrupt_at = None if pause is None or not size else int(pause * (size - 1))
    store, result = run_stored(collecting(concurrency, interrupt_at=interrupt_at, read_log=read_log), xs)
    assert result.status == "completed"
    assert sorted(result.output["log"]) == [2 * x for x in xs]
    assert len(result.output["doubled"]) == size
    if interrupt_at is None and not read_log:  # else the node routing back is the branch, the interrupt or 'c'
        assert result.output["doubled"] == [2 * x for x in xs]
    for dump, (data, parts) in zip(store.dumps, store.splits, strict=True):
        assert sorted(RunState.parts_left_out(data)) == sorted(parts)
        assert RunState.join_parts(pydantic_core.to_json(data), parts).model_dump(mode="json") == dump


def test_a_checkpoint_does_not_grow_with_the_length_of_the_lists() -> None:
    """Structural O(1): per save, the data and the new parts stay bounded however long the lists get."""
    small, _ = run_stored(collecting(4), list(range(2 * CHUNK)))
    large, _ = run_stored(collecting(4), list(range(20 * CHUNK)))
    # (the last save also holds the run's output, projected once at the end)
    assert max(size for size, _, _ in large.saves[:-1]) < 1.3 * max(size for size, _, _ in small.saves[:-1])
    # a save hands over at most the items snapshot, the input, and one full chunk of each list
    assert max(new for _, new, _ in large.saves) <= 2
    assert sum(new for _, new, _ in large.saves) <= 2 + 2 * 20 + 2


def test_appends_extend_the_same_list_object_until_someone_reads_it() -> None:
    identities: list[int] = []

    def watch(run_state: RunState, _events: Any) -> None:
        log = run_state.root_scope.state.get("log")
        if log:
            identities.append(id(log))

    eng = Engine(registry=tasks(), options=EngineOptions(ids=SequentialIds(), on_superstep=watch))
    assert eng.run(collecting(1), {"xs": list(range(50))}).status == "completed"
    assert len(identities) >= 50 and len(set(identities)) == 1
    identities.clear()
    assert eng.run(collecting(1, read_log=True), {"xs": list(range(20))}).status == "completed"
    assert len(set(identities)) > 1  # every read forces the next append to copy


def test_a_list_read_by_a_task_is_never_changed_by_later_appends() -> None:
    result = Engine(tasks(), EngineOptions(ids=SequentialIds())).run(collecting(1, read_log=True), {"xs": [1, 2, 3]})
    # ``copy`` holds what the body read after each append: the last read saw the whole log, not more
    assert result.state["copy"] == [2, 4, 6]
    assert result.state["log"] == [2, 4, 6]
    assert result.state["copy"] is not result.state["log"]


def test_a_missing_chunk_is_corrupt_state_not_a_shorter_list() -> None:
    store, _ = run_stored(collecting(2, interrupt_at=3 * CHUNK), list(range(4 * CHUNK)))
    data, parts = store.splits[-1]
    chunk_keys = [key for key in parts if key.startswith("list:")]
    assert chunk_keys
    with pytest.raises(CorruptRunStateError) as caught:
        RunState.join_parts(data, {k: v for k, v in parts.items() if k != chunk_keys[0]})
    assert caught.value.details["part"] == chunk_keys[0]


def test_snapshots_keep_what_the_lists_held_then() -> None:
    from runtime.checkpoint import InMemoryCheckpointer

    seen: list[tuple[int, list[int]]] = []
    cp = InMemoryCheckpointer()
    snapshots: list[Any] = []

    def keep(run_state: RunState, _events: Any) -> None:
        snapshots.append(run_state.snapshot())
        seen.append((run_state.step, list(run_state.root_scope.state.get("log", []))))

    Engine(registry=tasks(), options=EngineOptions(checkpointer=cp, ids=SequentialIds(), on_superstep=keep)).run(
        collecting(3), {"xs": list(range(40))})
    for snapshot, (_step, log) in zip(snapshots, seen, strict=True):
        assert snapshot.restore().root_scope.state.get("log", []) == log
    assert isinstance(GrowList([1]), list)


def test_a_resumed_run_keeps_storing_its_lists_in_chunks_without_rewriting_them() -> None:
    """Lists joined from a checkpoint are adopted with their ids: later saves hand over no old chunk again."""
    workflow = collecting(1, interrupt_at=2 * CHUNK + 3)
    first = Store()
    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=first, ids=SequentialIds()))
    paused = eng.run(workflow, {"xs": list(range(6 * CHUNK))})
    assert paused.status == "interrupted"
    stored = {k: pydantic_core.from_json(v) for k, v in first.parts.items()}
    joined = RunState.join_parts_data(first.data, stored)
    second = Store()
    second.ledger = first.ledger  # the same store, carrying on
    second.parts = dict(first.parts)
    done = Engine(registry=tasks(), options=EngineOptions(checkpointer=second, ids=SequentialIds())).resume(
        parse_run_state(joined), paused.interrupts[0].interrupt_id, {}, workflow=workflow)
    assert done.status == "completed"
    assert sorted(done.output["log"]) == [2 * x for x in range(6 * CHUNK)]
    assert len(second.saves) > 3 * CHUNK
    assert max(new for _, new, _ in second.saves) <= 2
    assert max(size for size, _, _ in second.saves[:-1]) < 20_000
    log_ids = {key.split(":")[1] for key in first.parts if key.startswith("list:")}
    assert log_ids and all(any(key.startswith(f"list:{i}:") for key in second.parts) for i in log_ids)
