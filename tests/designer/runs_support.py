"""Helpers shared by the run tests: real worker processes on the test database, small workflows built from
the runtime's built-in tasks, and polling the API until a run settles."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.urls import reverse

from runtime import WorkflowBuilder

REPO_ROOT = Path(__file__).resolve().parents[2]

#: A short lease so a killed worker's run is recoverable quickly; renewed every third of it.
TEST_LEASE_SECONDS = "2"

WORKER = [sys.executable, "manage.py", "run_worker", "--no-startup-delay", "--no-reload"]


def take_as_dead_worker(result_id: str, worker_id: str = "dead-worker") -> None:
    """Leave the task result ``result_id`` as a worker leaves it that took the task and then died: RUNNING.

    The one place the tests act as the backend's worker does (django-tasks-db's own ``claim``), because no
    public API moves a result along; everything they check goes through ``task.get_result`` instead.
    """
    from django_tasks_db.models import DBTaskResult

    DBTaskResult.objects.get(pk=result_id).claim(worker_id)


def finish_as_worker(result_id: str, return_value: Any) -> None:
    """Record ``return_value`` on a RUNNING result, as the backend's worker does when the task returns."""
    from django_tasks_db.models import DBTaskResult

    DBTaskResult.objects.get(pk=result_id).set_successful(return_value)


def task_result(run_id: int) -> Any:
    """The run's latest ``execute_run`` task result, read through the public API."""
    from designer.models import Run
    from designer.tasks import execute_run

    return execute_run.get_result(Run.objects.get(pk=run_id).task_result_id)


#: Test tasks (a step that blocks, a flaky one...) that workers started by these tests know.
STEP_TASKS = "tests.designer.step_tasks"


def worker_environment(base: dict[str, str]) -> dict[str, str]:
    return {**base, "TRELLIS_RUN_LEASE_SECONDS": TEST_LEASE_SECONDS, "TRELLIS_TASK_MODULES": STEP_TASKS}


def run_batch(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``run_worker --batch``: recover stale runs, then work until the queue is empty."""
    result = subprocess.run([*WORKER, "--batch", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"run_worker failed:\n{result.stdout}\n{result.stderr}"
    return result


def start_worker(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """A long-running ``run_worker`` polling every 50 ms. Stop it with ``stop_worker``."""
    return subprocess.Popen([*WORKER, "--interval", "0.05", *args], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def stop_process(process: subprocess.Popen[str]) -> None:
    """Ask it to stop (SIGTERM); kill it when it has not stopped in 20 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def stop_worker(process: subprocess.Popen[str]) -> str:
    stop_process(process)
    return process.stdout.read() if process.stdout else ""


def wait_for(condition: Callable[[], Any], *, timeout: float = 90, interval: float = 0.05,
             message: str = "condition", worker: subprocess.Popen[str] | None = None) -> Any:
    """Poll until ``condition()`` is truthy and return it. The timeout only guards against a hang."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if worker is not None and worker.poll() is not None:
            raise AssertionError(f"the worker exited while waiting for {message}:\n{stop_worker(worker)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        time.sleep(interval)


#: The statuses a run does not leave on its own.
FINISHED = ("completed", "failed", "cancelled")


def status_of(run_id: int) -> str:
    from designer.models import Run

    return Run.objects.values_list("status", flat=True).get(pk=run_id)


def work_until_finished(env: dict[str, str], runs: Sequence[dict[str, Any]], *, message: str) -> None:
    """Start one ``run_worker`` with ``env``, wait until every run of ``runs`` (as ``start_run`` answered) has
    finished, stop the worker."""
    worker = start_worker(env)
    try:
        wait_for(lambda: all(status_of(r["id"]) in FINISHED for r in runs), message=message, worker=worker)
    finally:
        stop_worker(worker)


def start_run(client: Any, workflow: Any, run_input: dict[str, Any], **body: Any) -> dict[str, Any]:
    response = client.post(reverse("api:workflow-runs", args=[workflow.pk]),
                           {"input": run_input, "version": "draft", **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def run_detail(client: Any, run_id: int) -> dict[str, Any]:
    response = client.get(reverse("api:run-detail", args=[run_id]))
    assert response.status_code == 200, response.json()
    return response.json()


def all_events(client: Any, run_id: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    after = None
    while True:
        params = {"limit": 1000} if after is None else {"limit": 1000, "after": after}
        page = client.get(reverse("api:run-events", args=[run_id]), params).json()
        if not page["events"]:
            return events
        events += page["events"]
        after = page["next_after"]


def counting_document(workflow_id: str = "counting", *, pause: bool = True, blocking: bool = False
                      ) -> dict[str, Any]:
    """``first`` (x + 1) -> ``pause`` (wait input.pause seconds) -> ``second`` (first * 2), each a superstep.

    Its output tells whether every step's write survived: {"first": x + 1, "second": 2 * (x + 1)}. The pause
    is the ``wait`` built-in, which suspends the run without holding a worker; ``blocking``: ``snooze``
    (``STEP_TASKS``), a step that holds its worker for the whole pause, for tests that act while a step runs.
    """
    graph = WorkflowBuilder(
        workflow_id, "Counting",
        input_schema={"type": "object", "properties": {"x": {"type": "integer"}, "pause": {"type": "number"}},
                      "required": ["x"]},
        state_schema={"type": "object", "properties": {"first": {"type": "integer"},
                                                       "second": {"type": "integer"}}},
    )
    first = graph.use("math", id="first", input=[{"target": "op", "value": "add"}, {"target": "a", "path": "input.x"},
                                                 {"target": "b", "value": 1}],
                      output=[{"source": ".", "target": "first"}])
    second = graph.use("math", id="second", input=[{"target": "op", "value": "mul"},
                                                   {"target": "a", "path": "state.first"}, {"target": "b", "value": 2}],
                       output=[{"source": ".", "target": "second"}])
    if pause:
        wait = graph.use("snooze" if blocking else "wait", id="pause",
                         input=[{"target": "seconds", "path": "input.pause"}])
        graph.chain(first, "ok", wait, "ok", second)
    else:
        graph.set_route(first, "ok", second)
    graph.output("first", "state.first")
    graph.output("second", "state.second")
    return graph.build().model_dump(mode="json")


def one_value_document(name: str, value: Any) -> dict[str, Any]:
    """One ``set_value`` step, also named ``name``, that writes ``value`` to ``state.<name>``, the run's output
    ``{name: value}``: two of them with different values tell which document (or version) a run ran."""
    graph = WorkflowBuilder(name, name.capitalize())
    graph.use("set_value", id=name, input=[{"target": "value", "value": value}],
              output=[{"source": ".", "target": name}])
    graph.output(name, f"state.{name}")
    return graph.build().model_dump(mode="json")


def flaky_document(*, max_concurrency: int = 1, state_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """Each of ``input.keys`` through ``flaky_once`` (``STEP_TASKS``: a key starting with ``bad`` fails its
    first call; every call is logged under ``input.folder``, see ``flaky_calls``), the results collected in
    ``state.done``, the output."""
    g = WorkflowBuilder("flaky-keys", "Flaky keys", input_schema={"type": "object", "properties": {
        "keys": {"type": "array", "items": {"type": "string"}}, "folder": {"type": "string"}},
        "required": ["keys", "folder"]}, state_schema=state_schema)
    each = g.foreach("each", "input.keys", max_concurrency=max_concurrency, results="done")
    call = g.use("flaky_once", id="call", input=[{"target": "key", "path": each.item},
                                                  {"target": "folder", "path": "input.folder"}])
    g.chain(each, "loop", call, "ok", each)
    g.output("done", "state.done")
    return g.build().model_dump(mode="json")


def flaky_calls(folder: Path) -> dict[str, int]:
    """How many times ``flaky_once`` was called for each key, from its logs in ``folder``."""
    return {p.name.removesuffix(".calls"): len(p.read_text().splitlines()) for p in folder.glob("*.calls")}


def greeting_document(workflow_id: str = "greetings") -> dict[str, Any]:
    """A foreach over ``input.names`` (two items at a time, alias ``person``) whose items each wait at an
    interrupt for a greeting, appended to ``state.greetings``."""
    graph = WorkflowBuilder(
        workflow_id, "Greetings",
        input_schema={"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}},
                      "required": ["names"]},
        state_schema={"type": "object", "properties": {
            "greetings": {"type": "array", "items": {"type": "string"}, "default": []}}},
    )
    people = graph.foreach("people", "input.names", as_="person", max_concurrency=2)
    ask = graph.interrupt(
        "ask", prompt="Greeting?", input=[{"target": "name", "path": people.item}],
        resume_schema={"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
        output=[{"source": "answer", "target": "greetings", "mode": "append"}],
    )
    graph.chain(people, "loop", ask, "ok", people)
    graph.output("greetings", "state.greetings")
    return graph.build().model_dump(mode="json")
