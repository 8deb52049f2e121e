"""Resuming from checkpoints: every superstep of a nested run, and a CLI process killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import Engine, RunState, Workflow, WorkflowBuilder
from runtime.checkpoint import SqliteCheckpointer
from runtime.engine import EngineOptions
from runtime.errors import CheckpointNotFoundError
from runtime.state import SequentialIds, parse_run_state
from tests.runtime.engine_helpers import CUSTOMERS, answer_all, loop_then_total, nested_capture, registry
from tests.runtime.test_cli import REPO, TASKS, cli, doubling_workflow
from tests.runtime.test_scope_isolation import child_capture, parent


def _dump(rs: RunState) -> dict[str, Any]:
    return rs.model_dump(mode="json")


def _checkpoints_of(workflow: Any, run_input: Any, **engine_kwargs: Any) -> tuple[Any, list[str]]:
    """The uninterrupted result and the JSON of every checkpoint the run took."""
    saved: list[str] = []
    eng = Engine(registry=registry(), options=EngineOptions(ids=SequentialIds(),
                 on_superstep=lambda rs, _: saved.append(rs.model_dump_json()), **engine_kwargs))
    return eng.run(workflow, run_input), saved


def test_continuing_from_every_superstep_of_a_nested_run_gives_the_same_result() -> None:
    workflow = nested_capture(after_inner=True, inner_concurrency=2)
    baseline, saved = _checkpoints_of(workflow, {"customers": CUSTOMERS})
    assert baseline.status == "completed" and len(saved) == baseline.run_state.step + 1
    for checkpoint in saved:
        fresh = Engine(registry=registry(), options=EngineOptions(ids=SequentialIds()))
        resumed = fresh.continue_run(RunState.from_json(checkpoint), workflow=workflow)
        assert resumed.status == "completed"
        assert resumed.output == baseline.output
        assert _dump(resumed.run_state) == _dump(baseline.run_state)
        # the trace of the continuation is exactly the tail of the uninterrupted trace
        tail = [e.identity() for e in baseline.trace[-len(resumed.trace):]] if resumed.trace else []
        assert [e.identity() for e in resumed.trace] == tail


def test_every_superstep_of_a_run_with_subgraphs_and_interrupts_resumes_identically() -> None:
    workflow = nested_capture(interrupt=True, inner_concurrency=2, outer_concurrency=2)
    eng = Engine(registry=registry(), options=EngineOptions(ids=SequentialIds()))
    baseline = answer_all(eng, eng.run(workflow, {"customers": CUSTOMERS}), workflow, through_json=False)
    saved: list[str] = []
    recording = Engine(registry=registry(), options=EngineOptions(ids=SequentialIds(),
                       on_superstep=lambda rs, _: saved.append(rs.model_dump_json())))
    answer_all(recording, recording.run(workflow, {"customers": CUSTOMERS}), workflow)
    for checkpoint in saved:
        state = RunState.from_json(checkpoint)
        fresh = Engine(registry=registry(), options=EngineOptions(ids=SequentialIds()))
        result = fresh.continue_run(state, workflow=workflow)
        result = answer_all(fresh, result, workflow)
        assert result.status == "completed"
        assert _dump(result.run_state) == _dump(baseline.run_state)

    call_parent = parent(child_orders=True)
    workflows = {"child": child_capture(with_foreach=True)}
    base, states = _checkpoints_of(call_parent, {"orders": [1, 2, 3]}, workflows=workflows)
    assert base.status == "completed"
    assert any(len(json.loads(s)["scopes"]) > 1 for s in states)  # some checkpoints sit inside the child scope
    for checkpoint in states:
        fresh = Engine(registry=registry(), options=EngineOptions(ids=SequentialIds(), workflows=workflows))
        again = fresh.continue_run(parse_run_state(checkpoint), workflow=call_parent)
        assert _dump(again.run_state) == _dump(base.run_state)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(orders=st.lists(st.lists(st.integers(0, 9), max_size=3), min_size=0, max_size=3),
       inner=st.integers(1, 3), outer=st.integers(1, 2), cut=st.integers(0, 200))
def test_any_checkpoint_round_trips_and_resumes_to_the_same_end(orders: list[list[int]], inner: int, outer: int,
                                                                  cut: int) -> None:
    customers = [{"name": f"c{i}", "orders": o} for i, o in enumerate(orders)]
    workflow = nested_capture(after_inner=True, inner_concurrency=inner, outer_concurrency=outer)
    baseline, saved = _checkpoints_of(workflow, {"customers": customers})
    checkpoint = RunState.from_json(saved[cut % len(saved)])
    assert RunState.from_json(checkpoint.model_dump_json()) == checkpoint
    resumed = Engine(registry(), EngineOptions(ids=SequentialIds())).continue_run(checkpoint, workflow=workflow)
    assert _dump(resumed.run_state) == _dump(baseline.run_state)


def _wait_for_step(directory: Path, step: int, process: subprocess.Popen[str]) -> RunState:
    """The run's checkpoint once it has reached ``step``, read from the live SQLite file beside the process."""
    deadline = time.monotonic() + 120
    while not (directory / "runs.sqlite3").exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"no checkpoint file: {process.stderr.read() if process.stderr else ''}")
        time.sleep(0.02)
    with SqliteCheckpointer(directory / "runs.sqlite3", durable=False) as watcher:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"the run ended before step {step}: "
                                     f"{process.stderr.read() if process.stderr else ''}")
            try:
                state = watcher.load("ref")
            except CheckpointNotFoundError:
                state = None
            if state is not None and state.step >= step:
                return state
            time.sleep(0.02)
    raise AssertionError(f"no checkpoint reached step {step}")


def _kill_mid_run_and_resume(tmp_path: Path, workflow: Workflow, run_input: Any, step: int) -> None:
    """Run ``workflow`` through the command line twice: once straight, once SIGKILLed at ``step`` (as a
    ``python -m runtime`` process) and resumed. The straight run and the resume run in this process.

    Both must end with the same output, state, stored RunState and stored trace.
    """
    workflow_path = tmp_path / "wf.json"
    workflow_path.write_text(workflow.model_dump_json(), encoding="utf-8")
    args = ["run", str(workflow_path), "--input-json", json.dumps(run_input), "--tasks", TASKS, "--ids", "sequential",
            "--compact"]

    reference = cli(*args, "--checkpoint-dir", str(tmp_path / "reference"), "--run-id", "ref")
    assert reference.returncode == 0, reference.stderr
    expected = json.loads(reference.stdout)

    directory = tmp_path / "crash"
    victim = subprocess.Popen([sys.executable, "-m", "runtime", *args, "--checkpoint-dir", str(directory),
                               "--run-id", "ref"], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        before = _wait_for_step(directory, step, victim)
    finally:
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    with SqliteCheckpointer(directory / "runs.sqlite3") as crashed:
        killed_at = crashed.load("ref")
    assert killed_at.status == "running" and killed_at.step >= before.step

    resumed = cli("resume", "ref", "--checkpoint-dir", str(directory), "--tasks", TASKS, "--ids", "sequential",
                  "--compact")
    assert resumed.returncode == 0, resumed.stderr
    finished = json.loads(resumed.stdout)
    assert finished["status"] == "completed"
    assert finished["output"] == expected["output"]
    assert finished["state"] == expected["state"]
    # The stored history is whole: the same events as the uninterrupted run, once each, in order.
    with SqliteCheckpointer(directory / "runs.sqlite3") as crashed, \
            SqliteCheckpointer(tmp_path / "reference" / "runs.sqlite3") as clean:
        assert [e.identity() for e in crashed.load_events("ref")] == [e.identity() for e in clean.load_events("ref")]
        assert _dump(crashed.load("ref")) == _dump(clean.load("ref"))


def test_cli_run_killed_with_sigkill_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    xs = list(range(1, 9))
    _kill_mid_run_and_resume(tmp_path, doubling_workflow(delay=0.15), {"xs": xs}, 3)


def collecting_workflow(delay: float) -> Workflow:
    """A foreach over more items than one stored chunk, collecting results and appending to a state list."""
    g = WorkflowBuilder("collecting", input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "integer"}}}, "required": ["xs"]},
        state_schema={"type": "object", "properties": {"log": {"type": "array", "default": []}}})
    each = g.foreach("each", "input.xs", max_concurrency=8, results="doubled")
    d = g.use("slow_double", id="double", input=[{"target": "x", "path": each.item},
                                                 {"target": "delay", "value": delay}],
              output=[{"source": ".", "target": "log", "mode": "append"}])
    loop_then_total(g, each, d, "total", id="sum", results="state.doubled", target="sum")
    g.output("doubled", "state.doubled")
    g.output("log", "state.log")
    g.output("sum", "state.sum")
    return g.build()


def test_a_collecting_foreach_killed_mid_run_resumes_with_the_same_results(tmp_path: Path) -> None:
    """Results and the appended list span several stored chunks when the process dies; nothing is lost."""
    xs = list(range(400))
    _kill_mid_run_and_resume(tmp_path, collecting_workflow(0.01), {"xs": xs}, 30)
