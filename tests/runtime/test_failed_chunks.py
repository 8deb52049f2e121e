"""A foreach's tolerated failures (``ForeachActivation.failed``) are stored like its results: full chunks as
write-once parts, the open tail inline, so a save costs the same however many items have failed."""

from __future__ import annotations

import copy
from typing import Any

import pydantic_core
import pytest

from runtime import Engine, RunState, Workflow, WorkflowBuilder
from runtime._parts import CHUNK
from runtime.checkpoint import InMemoryCheckpointer, SqliteCheckpointer
from runtime.engine import EngineOptions
from runtime.errors import CorruptRunStateError
from runtime.state import SequentialIds, parse_run_state
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import XS_INPUT
from tests.runtime.test_state_lists import Store


def tasks() -> TaskRegistry:
    reg = TaskRegistry()

    @reg.task
    def odd_fails(x: int) -> int:
        if x % 2:
            raise ValueError(f"item {x} is odd")
        return x

    return reg


def failing(items: int, *, concurrency: int = 1, interrupt_at: int | None = None, tolerated: int | None = None
            ) -> Workflow:
    """Odd items fail and are tolerated (``tolerated``, all by default); optionally the item ``interrupt_at`` asks
    before it goes on."""
    g = WorkflowBuilder("failing", input_schema=XS_INPUT)
    each = g.foreach("each", "input.xs", max_concurrency=concurrency, results="out",
                     tolerated_failure_count=items if tolerated is None else tolerated)
    body = g.use("odd_fails", "body", input=[{"target": "x", "path": each.item}])
    g.set_route(each, "loop", body)
    if interrupt_at is None:
        g.set_route(body, "ok", each)
    else:
        gate = g.branch("gate", path=each.index, cases=[{"label": "ask", "op": "equals", "value": interrupt_at}])
        ask = g.interrupt("ask", prompt="go on?", resume_schema={"type": "object"})
        g.chain(body, "ok", gate, "ask", ask, "ok", each)
        g.set_route(gate, "default", each)
    g.output("out", "state.out")
    return g.build()


def expected(items: int) -> list[int | None]:
    return [None if x % 2 else x for x in range(items)]


def failed_chunks(keys: Any) -> list[str]:
    return sorted(key for key in keys if key.startswith("list:failed."))


def test_a_later_save_hands_over_only_the_failed_chunk_that_just_filled() -> None:
    items = 8 * CHUNK + 10  # 4 full chunks of failures (odd items), and a tail
    store = Store()
    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=store, ids=SequentialIds()))
    result = eng.run(failing(items), {"xs": list(range(items))})
    assert result.status == "completed" and result.output["out"] == expected(items)
    sizes = [len(pydantic_core.to_json(data)) for data, _parts in store.splits]
    handed = [failed_chunks(parts) for _data, parts in store.splits]
    # Every checkpoint while the activation lived stored the failures in chunks: 0..3, one more each time one fills
    most = max(len(keys) for keys in handed)
    assert most == 4
    # Store.save asserts that no stored part is handed over again; here: each save's delta held exactly the chunk
    # that filled since the previous save, never an earlier one.
    seen: set[str] = set()
    for before, after in zip(handed, handed[1:], strict=False):
        new = set(after) - set(before)
        assert len(new) <= 1 and not new & seen
        seen |= new
    assert len({key.rsplit(":", 1)[0] for key in seen}) == 1
    assert sorted(key.rsplit(":", 1)[1] for key in seen) == ["0", "1", "2", "3"]
    # The data of a save stays bounded: the last quarter's largest is about the second quarter's (on the old form
    # it held every failure so far: about twice the second quarter's)
    quarter = len(sizes) // 4
    assert max(sizes[-quarter:-1]) < 1.3 * max(sizes[quarter:2 * quarter])


def test_the_nth_save_delta_holds_only_the_new_failed_chunk() -> None:
    """The save at which the k-th chunk of failures fills hands over that chunk and nothing of the earlier ones."""
    items = 4 * CHUNK + 2
    store = Store()
    deltas: list[list[str]] = []
    original = store.save

    def save(run_state: RunState, events: Any = ()) -> None:
        before = set(store.parts)
        original(run_state, events)
        deltas.append(failed_chunks(set(store.parts) - before))

    store.save = save  # type: ignore[method-assign]
    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=store, ids=SequentialIds()))
    assert eng.run(failing(items), {"xs": list(range(items))}).status == "completed"
    filled = [keys for keys in deltas if keys]
    assert [len(keys) for keys in filled] == [1, 1]  # chunks 0 and 1 of the 2 * CHUNK + 1 failures
    assert [key.rsplit(":", 1)[1] for keys in filled for key in keys] == ["0", "1"]


def test_joined_states_keep_every_failure_in_order_and_the_error_policy_sees_them() -> None:
    items = 3 * CHUNK
    store = Store()  # Store.save checks that split and joined give back the exact state at every save
    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=store, ids=SequentialIds()))
    workflow = failing(items, concurrency=5)
    result = eng.run(workflow, {"xs": list(range(items))})
    assert result.status == "completed" and result.output["out"] == expected(items)
    last_with_failures = [dump for dump in store.dumps if any(
        len(act.get("failed", ())) > CHUNK for act in dump["activations"].values())][-1]
    failed = next(iter(last_with_failures["activations"].values()))["failed"]
    assert sorted(entry["index"] for entry in failed) == [x for x in range(items) if x % 2][:len(failed)]
    assert all(entry["error"]["message"] == f"item {entry['index']} is odd" for entry in failed)


def failures_named(done: Any, items: int) -> None:
    """``done`` failed at the foreach with more failures than it tolerates, naming every odd item."""
    assert done.status == "failed"
    error = done.run_state.error if done.run_state is not None else None
    assert error is not None and error["code"] == "node.failed"
    cause = error["cause"]
    assert cause["code"] == "foreach.items_failed" and cause["failed"] == [x for x in range(items) if x % 2]
    assert [entry["index"] for entry in cause["errors"]] == list(range(1, 20, 2))
    assert cause["errors"][0]["error"]["message"] == "item 1 is odd"


def test_more_failures_than_tolerated_fail_the_foreach_naming_them_after_a_resume_from_chunks() -> None:
    items = 4 * CHUNK
    workflow = failing(items, interrupt_at=3 * CHUNK, tolerated=2 * CHUNK - 1)
    store = Store()
    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=store, ids=SequentialIds()))
    paused = eng.run(workflow, {"xs": list(range(items))})
    assert paused.status == "interrupted"
    assert failed_chunks(store.parts)  # the failures so far are in stored chunks
    failures_named(eng.resume(store.load(paused.run_id), paused.interrupts[0].interrupt_id, {}, workflow=workflow),
                   items)


def test_a_missing_failed_chunk_is_corrupt_state_naming_the_chunk() -> None:
    store = Store()
    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=store, ids=SequentialIds()))
    workflow = failing(4 * CHUNK, interrupt_at=3 * CHUNK)
    assert eng.run(workflow, {"xs": list(range(4 * CHUNK))}).status == "interrupted"
    data, parts = store.splits[-1]
    keys = failed_chunks(parts)
    assert keys and sorted(RunState.parts_left_out(data)) == sorted(parts)
    with pytest.raises(CorruptRunStateError) as caught:
        RunState.join_parts(data, {k: v for k, v in parts.items() if k != keys[0]})
    assert caught.value.details["part"] == keys[0]
    assert caught.value.details["activation_id"]
    assert "failed items of foreach activation" in str(caught.value)


def old_form(workflow: Workflow, items: int) -> tuple[dict[str, Any], str]:
    """A paused run's state as a checkpoint before failures were chunked stored it: every ``failed`` entry inline.

    The structure comes from a real paused run; its ``failed`` list is written out here entry by entry, in the
    exact form the engine recorded before (``{"index", "error": {type, message, code, ...}}``).
    """
    paused = Engine(registry=tasks(), options=EngineOptions(ids=SequentialIds())).run(
        workflow, {"xs": list(range(items))})
    assert paused.status == "interrupted" and paused.run_state is not None
    data = copy.deepcopy(paused.run_state.model_dump(mode="json"))
    (activation,) = data["activations"].values()
    recorded = activation["failed"]
    activation["failed"] = [{"index": x, "error": dict(recorded[n]["error"], message=f"item {x} is odd")}
                            for n, x in enumerate(range(1, 3 * CHUNK, 2))]
    assert activation["failed"] == recorded  # the hand-written entries are what the engine wrote
    assert len(activation["failed"]) > CHUNK and "failed_parts" not in activation
    return data, paused.interrupts[0].interrupt_id


@pytest.mark.parametrize("checkpointer", ["store", "sqlite", "memory"])
def test_a_state_stored_in_the_old_form_loads_and_resumes(checkpointer: str, tmp_path: Any) -> None:
    """A run paused with its failures inline resumes after the upgrade: they all count (the foreach fails naming
    each), and the next saves store them in chunks."""
    items = 4 * CHUNK
    workflow = failing(items, interrupt_at=3 * CHUNK, tolerated=2 * CHUNK - 1)
    data, interrupt_id = old_form(workflow, items)
    # stored before the upgrade: the JSON alone, no parts
    loaded = parse_run_state(RunState.join_parts_data(pydantic_core.to_json(data), {}))
    (activation,) = loaded.activations.values()
    assert len(activation.failed) == 3 * CHUNK // 2
    store: Any
    if checkpointer == "store":
        store = Store()
    elif checkpointer == "sqlite":
        store = SqliteCheckpointer(str(tmp_path / "runs.sqlite3"), durable=False)
    else:
        store = InMemoryCheckpointer()
    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=store, ids=SequentialIds()))
    failures_named(eng.resume(loaded, interrupt_id, {}, workflow=workflow), items)
    if checkpointer == "store":
        # the first save after the upgrade put the inline failures into chunks
        (activation_id,) = data["activations"]
        assert failed_chunks(store.splits[0][1]) == [f"list:failed.{activation_id}:0"]
        assert "failed_parts" in store.splits[0][0]["activations"][activation_id]
    if checkpointer == "sqlite":
        store.close()


def test_snapshots_share_the_failed_list_and_keep_what_it_held_then() -> None:
    """An in-memory checkpoint notes the length of the failures instead of copying them at every superstep;
    failures appended later do not show in it."""
    items = 2 * CHUNK + 6
    taken: list[tuple[Any, list[dict[str, Any]]]] = []

    def keep(run_state: RunState, _events: Any) -> None:
        (activation,) = run_state.activations.values() or (None,)
        if activation is not None and activation.failed:
            snapshot = run_state.snapshot()
            assert snapshot.data["activations"][activation.activation_id]["failed"] is activation.failed
            taken.append((snapshot, copy.deepcopy(activation.failed)))

    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=InMemoryCheckpointer(), ids=SequentialIds(),
                                                         on_superstep=keep))
    assert eng.run(failing(items, concurrency=3), {"xs": list(range(items))}).status == "completed"
    assert len(taken) > 20 and len(taken[-1][1]) > CHUNK
    for snapshot, failed in taken:
        (activation,) = snapshot.restore().activations.values()
        assert activation.failed == failed
