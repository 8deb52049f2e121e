"""Redrive (run a failed run's failed steps again) and fork (a new run from a past checkpoint)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from runtime import Engine, RunResult, Workflow, WorkflowBuilder
from runtime.checkpoint import HistoryPolicy, InMemoryCheckpointer
from runtime.engine import EngineOptions
from runtime.errors import ForkError, InputValidationError, RedriveError, ResumeError
from runtime.state import SequentialIds
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import asking

GROUPS = [{"name": "g0", "xs": [1, 2]}, {"name": "g1", "xs": [3]}, {"name": "g2", "xs": [4, 5, 6]},
          {"name": "g3", "xs": []}, {"name": "g4", "xs": [7, 8]}]


def tasks(fail: set[str], calls: Counter[str]) -> TaskRegistry:
    """``label`` runs once per group (depth 1), ``cell`` once per group and x (depth 2); each fails on its
    first call for the keys in ``fail``, like a flaky service."""
    registry = TaskRegistry()

    def attempt(key: str) -> None:
        calls[key] += 1
        if key in fail and calls[key] == 1:
            raise ConnectionError(f"{key} is unreachable")

    @registry.task
    def label(name: str) -> str:
        attempt(name)
        return name.upper()

    @registry.task
    def cell(name: str, x: int, factor: int) -> dict[str, Any]:
        attempt(f"{name}/{x}")
        return {"group": name, "value": x * factor}

    return registry


def nested() -> Workflow:
    """Groups two at a time; in each, a depth-1 task, then the group's cells three at a time (depth 2)."""
    g = WorkflowBuilder("nested-redrive", input_schema={"type": "object", "properties": {"groups": {
        "type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "xs": {"type": "array", "items": {"type": "integer"}}},
            "required": ["name", "xs"]}}}, "required": ["groups"]},
        state_schema={"type": "object", "properties": {"factor": {"type": "integer", "default": 10}}})
    groups = g.foreach("groups", "input.groups", max_concurrency=2, results="per_group")
    name = "context.foreach.groups.item.name"
    head = g.use("label", "label", input=[{"target": "name", "path": name}])
    cells = g.foreach("cells", "context.foreach.groups.item.xs", max_concurrency=3, results="cells_done")
    work = g.use("cell", "cell", input=[{"target": "name", "path": name}, {"target": "x", "path": cells.item},
                                        {"target": "factor", "path": "state.factor"}])
    g.chain(groups, "loop", head, "ok", cells, "loop", work, "ok", cells, "done", groups)
    g.output("per_group", "state.per_group")
    return g.build()


def engine(fail: set[str], calls: Counter[str], **options: Any) -> Engine:
    return Engine(registry=tasks(fail, calls), options=EngineOptions(ids=SequentialIds(), **options))


def clean_output() -> Any:
    result = engine(set(), Counter()).run(nested(), {"groups": GROUPS})
    assert result.status == "completed"
    return result.output


def every_key() -> list[str]:
    return [group["name"] for group in GROUPS] + [f"{group['name']}/{x}" for group in GROUPS for x in group["xs"]]


# -- redrive ---------------------------------------------------------------------------


def test_redrive_runs_exactly_the_failed_items_at_both_depths_and_ends_like_a_clean_run() -> None:
    fail = {"g1", "g2", "g0/2", "g2/5", "g4/8"}  # depth-1 and depth-2 failures, in several groups
    calls: Counter[str] = Counter()
    cp = InMemoryCheckpointer()
    eng = engine(fail, calls, checkpointer=cp)
    workflow = nested()
    result = eng.run(workflow, {"groups": GROUPS})
    redrives = 0
    trace = list(result.trace)
    while result.status == "failed":
        assert result.error is not None and result.error.code == "node.failed"
        redrives += 1
        assert redrives <= len(fail), "each redrive must get past at least one failure"
        before = Counter(calls)
        failed_frames = {f.frame_id: f for f in result.run_state.frames.values() if f.status == "failed"}
        # From the stored checkpoint (through JSON), as a designer worker does.
        result = eng.redrive(cp.load(result.run_id), workflow=workflow)
        trace.extend(result.trace)
        marker = result.trace[0]
        assert marker.kind == "run_redriven" and marker.summary["attempt"] == redrives + 1
        assert {entry["frame_id"] for entry in marker.summary["frames"]} == set(failed_frames)
        # The first thing the redrive runs is exactly what failed, in the same frames (context intact).
        first_step = [e for e in result.trace if e.kind == "node_started" and e.step == marker.step + 1]
        assert {e.frame_id for e in first_step} >= set(failed_frames)
        assert all(calls[key] >= before[key] for key in before)
    assert result.status == "completed"
    assert result.output == clean_output()
    assert result.run_state.attempt == redrives + 1 >= 2
    # Exactly the failed items ran again: each failing key twice, every other one once.
    assert calls == Counter({key: 2 if key in fail else 1 for key in every_key()})
    kinds = Counter(e.kind for e in trace)
    assert kinds["run_redriven"] == redrives and kinds["run_failed"] == redrives
    assert [e.seq for e in trace] == list(range(len(trace)))  # one trace, numbered on across attempts


def test_one_redrive_reruns_failures_of_both_depths_from_the_same_superstep() -> None:
    groups = [{"name": "g0", "xs": [1, 2, 3, 4]}, {"name": "g1", "xs": [3]}, {"name": "g2", "xs": [5]}]
    calls: Counter[str] = Counter()
    eng = engine({"g2", "g0/4"}, calls)
    failed = eng.run(nested(), {"groups": groups})
    assert failed.status == "failed"
    stuck = sorted((f.node_id, f.metadata["foreach"]["index"]) for f in failed.run_state.frames.values()
                   if f.status == "failed")
    assert stuck == [("cell", 3), ("label", 2)]  # g0's fourth cell (depth 2) and g2's label (depth 1) at once
    done = eng.redrive(failed.run_state)
    assert done.status == "completed"
    assert done.output == engine(set(), Counter()).run(nested(), {"groups": groups}).output
    assert calls == Counter({"g0": 1, "g1": 1, "g2": 2, "g0/1": 1, "g0/2": 1, "g0/3": 1, "g0/4": 2, "g1/3": 1,
                             "g2/5": 1})


def test_redrive_keeps_the_results_of_completed_items() -> None:
    calls: Counter[str] = Counter()
    eng = engine({"g2/6"}, calls)
    failed = eng.run(nested(), {"groups": GROUPS})
    assert failed.status == "failed"
    assert failed.error is not None and failed.error.details["index"] == 2
    collected = [a.results for a in failed.run_state.activations.values() if a.node_id == "cells"]
    assert any(r[:2] == [{"group": "g2", "value": 40}, {"group": "g2", "value": 50}] for r in collected)
    done = eng.redrive(failed.run_state)
    assert done.status == "completed" and done.output == clean_output()
    assert calls["g2/4"] == calls["g2/5"] == 1 and calls["g2/6"] == 2


def test_redrive_leaves_the_callers_state_object_alone() -> None:
    eng = engine({"g0"}, Counter())
    failed = eng.run(nested(), {"groups": GROUPS})
    before = failed.run_state.model_dump(mode="json")
    eng.redrive(failed.run_state)
    assert failed.run_state.model_dump(mode="json") == before


def test_only_a_failed_run_can_be_redriven() -> None:
    eng = engine(set(), Counter())
    done = eng.run(nested(), {"groups": GROUPS})
    with pytest.raises(RedriveError) as caught:
        eng.redrive(done.run_state)
    assert caught.value.code == "redrive.invalid"
    assert "completed" in caught.value.message and "only a failed run" in caught.value.message


def test_a_run_stopped_by_the_step_limit_has_nothing_to_redrive() -> None:
    # One step per frame: an item frame's second node is over the limit (the limit counts each frame's steps).
    eng = engine(set(), Counter(), max_steps=1)
    stopped = eng.run(nested(), {"groups": GROUPS})
    assert stopped.status == "failed" and stopped.error is not None and stopped.error.code == "run.step_limit"
    with pytest.raises(RedriveError, match="no failed step"):
        eng.redrive(stopped.run_state)


# -- fork --------------------------------------------------------------------------------


def recorded_run() -> tuple[Engine, InMemoryCheckpointer, RunResult]:
    cp = InMemoryCheckpointer(history=HistoryPolicy())
    eng = engine(set(), Counter(), checkpointer=cp)
    result = eng.run(nested(), {"groups": GROUPS})
    assert result.status == "completed"
    return eng, cp, result


def test_a_fork_at_every_superstep_without_edits_ends_like_the_original() -> None:
    eng, cp, original = recorded_run()
    steps = [info.step for info in cp.history(original.run_id)]
    assert steps == list(range(original.run_state.step + 1))
    for info in cp.history(original.run_id)[:-1]:
        forked = eng.fork(cp.load_at(original.run_id, info.step), run_id=f"fork_{info.step}")
        assert forked.status == "completed", f"fork at superstep {info.step}"
        assert forked.output == original.output, f"fork at superstep {info.step}"
        assert forked.run_id == f"fork_{info.step}"
        assert forked.trace[0].kind == "run_forked"
        assert forked.trace[0].summary == {"parent_run_id": original.run_id, "parent_step": info.step, "edited": []}


def test_a_fork_with_an_edited_state_goes_on_with_it() -> None:
    eng, cp, original = recorded_run()
    # Part way through: some cells have run with factor 10, the rest run with the edited factor.
    middle = cp.history(original.run_id)[len(cp.history(original.run_id)) // 2].step
    at = cp.load_at(original.run_id, middle)
    forked = eng.fork(at, state={**at.scopes["root"].state, "factor": 1000}, run_id="fork_edit")
    values = [cell["value"] for group in forked.output["per_group"] for cell in group]
    before = [cell["value"] for group in original.output["per_group"] for cell in group]
    assert forked.trace[0].summary["edited"] == ["state"]
    assert len(values) == len(before) and values != before
    assert {v // x for v, x in zip(values, [x for g in GROUPS for x in g["xs"]], strict=True)} == {10, 1000}


def test_an_edited_state_that_breaks_the_schema_is_refused_with_the_field() -> None:
    eng, cp, original = recorded_run()
    with pytest.raises(InputValidationError) as caught:
        eng.fork(cp.load_at(original.run_id, 3), state={"factor": "lots"})
    assert caught.value.code == "input.invalid"
    assert caught.value.details["field"] == "state"
    assert [e["field"] for e in caught.value.details["errors"]] == ["factor"]


def test_a_finished_checkpoint_cannot_be_forked() -> None:
    eng, cp, original = recorded_run()
    with pytest.raises(ForkError) as caught:
        eng.fork(cp.load_at(original.run_id, original.run_state.step))
    assert caught.value.code == "fork.invalid" and "pick an earlier superstep" in caught.value.message


def test_a_fork_can_answer_an_interrupt_differently() -> None:
    cp = InMemoryCheckpointer(history=HistoryPolicy())
    eng = Engine(registry=TaskRegistry(), options=EngineOptions(ids=SequentialIds(), checkpointer=cp))
    workflow = asking()
    first = eng.run(workflow, {"xs": [1, 2]})
    paused_at = first.run_state.step
    asked = {i.payload["x"]: i.interrupt_id for i in first.interrupts}
    current = first
    for x in (1, 2):
        current = eng.resume(current.run_state, asked[x], {"a": x}, workflow=workflow)
    assert current.output == {"answers": [{"a": 1}, {"a": 2}]}

    at = cp.load_at(first.run_id, paused_at)
    forked = eng.fork(at, answer={"interrupt_id": asked[1], "value": {"a": 100}}, workflow=workflow)
    assert forked.status == "interrupted" and [i.interrupt_id for i in forked.interrupts] == [asked[2]]
    assert forked.trace[0].summary["edited"] == [f"answer:{asked[1]}"]
    done = eng.resume(forked.run_state, asked[2], {"a": 2}, workflow=workflow)
    assert done.output == {"answers": [{"a": 100}, {"a": 2}]}
    assert cp.load(first.run_id).output == {"answers": [{"a": 1}, {"a": 2}]}  # the origin is untouched

    with pytest.raises(ResumeError):
        eng.fork(at, answer={"interrupt_id": asked[1], "value": {"a": "no"}}, workflow=workflow)
    with pytest.raises(ForkError) as caught:
        eng.fork(at, answer={"interrupt_id": "int_missing", "value": {"a": 1}}, workflow=workflow)
    assert caught.value.details["open"] == sorted(asked.values())


# -- redrive inside subgraph calls -------------------------------------------------------


def calling(child_id: str, workflow_id: str) -> Workflow:
    """A workflow whose one step calls ``child_id`` with the groups; the call's result is its output."""
    g = WorkflowBuilder(workflow_id, input_schema={"type": "object", "properties": {"groups": {"type": "array"}},
                                                   "required": ["groups"]},
                        state_schema={"type": "object", "properties": {"per_group": {}}})
    g.subgraph(child_id, id=f"call_{child_id}", input=[{"target": "groups", "path": "input.groups"}],
               output=[{"source": "per_group", "target": "per_group"}])
    g.output("per_group", "state.per_group")
    return g.build()


@pytest.mark.parametrize("depth", [1, 2])
def test_a_failure_inside_a_subgraph_redrives_only_the_failed_inner_steps(depth: int) -> None:
    """The nested foreach runs inside a subgraph call (``depth`` calls deep); failures at both foreach depths.
    Each redrive runs exactly the failed inner frames again, in the child scope, and the call's completed items
    keep their results: every failing key runs twice, every other once, and the output is a clean run's."""
    fail = {"g1", "g2", "g0/2", "g2/5", "g4/8"}
    workflows = {"nested-redrive": nested(), "middle": calling("nested-redrive", "middle")}
    top = calling("middle" if depth == 2 else "nested-redrive", "top")
    calls: Counter[str] = Counter()
    cp = InMemoryCheckpointer()
    eng = engine(fail, calls, checkpointer=cp, workflows=workflows)
    result = eng.run(top, {"groups": GROUPS})
    redrives = 0
    while result.status == "failed":
        assert result.error is not None and len(result.error.details["via"]) == depth
        rs = result.run_state
        assert len(rs.scopes) == depth + 1  # the call's scopes are kept, not discarded
        callers = [f for f in rs.frames.values() if f.node_id.startswith("call_")]
        assert len(callers) == depth and all(f.status == "waiting" for f in callers)
        failed = {f.frame_id for f in rs.frames.values() if f.status == "failed"}
        assert failed and all(rs.frames[fid].scope_id != "root" and rs.frames[fid].node_id in ("label", "cell")
                              for fid in failed)
        redrives += 1
        assert redrives <= len(fail)
        result = eng.redrive(cp.load(result.run_id), workflow=top)
        marker = result.trace[0]
        assert marker.kind == "run_redriven" and {e["frame_id"] for e in marker.summary["frames"]} == failed
        # No call starts again: its scope was kept.
        assert not [e for e in result.trace if e.kind == "scope_opened" and e.summary["workflow"] != "nested-redrive"]
    assert result.status == "completed", result.error
    clean = engine(set(), Counter(), workflows=workflows).run(top, {"groups": GROUPS})
    assert result.output == clean.output == {"per_group": clean_output()["per_group"]}
    assert calls == Counter({key: 2 if key in fail else 1 for key in every_key()})
    assert redrives >= 2


def test_a_subgraph_failure_caught_by_an_error_route_still_discards_the_call() -> None:
    g = WorkflowBuilder("guarded", input_schema={"type": "object", "properties": {"groups": {"type": "array"}}},
                        state_schema={"type": "object", "properties": {"per_group": {}, "caught": {}}})
    call = g.subgraph("nested-redrive", id="call", input=[{"target": "groups", "path": "input.groups"}],
                      output=[{"source": "per_group", "target": "per_group"}])
    caught = g.use("label", id="caught", input=[{"target": "name", "value": "caught"}],
                   output=[{"source": ".", "target": "caught"}])
    g.set_route(call, "error", caught)
    g.output("caught", "state.caught")
    result = engine({"g0/1"}, Counter(), workflows={"nested-redrive": nested()}).run(g.build(), {"groups": GROUPS})
    assert result.status == "completed" and result.output == {"caught": "CAUGHT"}
    assert list(result.run_state.scopes) == ["root"]
