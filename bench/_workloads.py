"""The engine bench's workloads, each built twice: as a Trellis document and as a LangGraph graph.

Both sides do the same trivial work per node step (add one to an integer, or
double an item and write nothing), so the difference measured is the cost of
the engines themselves: scheduling, state handling, tracing, checkpoints.

``steps`` of a workload is the number of node executions, counted the same
way on both sides (LangGraph's fan-out node is counted like Trellis's foreach
node), so microseconds per step = wall time / steps on both sides.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from runtime import Engine, Workflow, WorkflowBuilder
from runtime.checkpoint import Checkpointer
from runtime.document import ForeachNode
from runtime.engine import EngineOptions
from runtime.tasks import Route, TaskRegistry

REPO_ROOT = Path(__file__).resolve().parent.parent

COUNTER_STATE: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer", "default": 0}}}


def one_math_step_document() -> dict[str, Any]:
    """One ``math`` step (1 + 2, in a step process) whose sum is the run's output ``{"sum": 3}``: the smallest run
    that still crosses the worker's step boundary (bench small_runs, its profile, and tests/designer/runs)."""
    g = WorkflowBuilder("one", "One step")
    g.use("math", id="add", input=[{"target": "op", "value": "add"}, {"target": "a", "value": 1},
                                   {"target": "b", "value": 2}], output=[{"source": ".", "target": "sum"}])
    g.output("sum", "state.sum")
    return g.build().model_dump(mode="json")


def registry() -> TaskRegistry:
    tasks = TaskRegistry()

    @tasks.task
    def inc(x: int) -> int:
        return x + 1

    @tasks.task(labels=("again", "done"))
    def count(x: int, limit: int) -> Any:
        return Route("again" if x + 1 < limit else "done", x + 1)

    @tasks.task
    def touch(x: int) -> int:
        return x * 2

    return tasks


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    steps: int  # node executions per call, the same count on both sides
    calls: int  # how many times the workflow is invoked (each a fresh run)
    input: Any


# ---------------------------------------------------------------------------
# Trellis documents


def trellis_runs(workflow: Workflow, inputs: list[Any], checkpointer: Callable[[], Checkpointer | None], *,
                 who: str = "trellis", close: Callable[[Any], None] | None = None,
                 workflows: Mapping[object, Workflow] | None = None
                 ) -> tuple[Callable[[], Engine], Callable[[Engine], Any]]:
    """What ``bench_engine.timed`` measures of a Trellis workload: ``prepare`` (not timed) makes an engine with a
    fresh ``checkpointer()`` and compiles ``workflow`` (analysis + compilation, like LangGraph's
    ``graph.compile()``); ``run`` runs each input, refusing a run that does not complete (a benchmark of a
    broken run measures nothing), hands the checkpointer to ``close`` (one that holds a connection), and returns
    the last output. ``workflows``: the child documents a subgraph node may call, by id."""
    tasks = registry()

    def prepare() -> Engine:
        engine = Engine(registry=tasks, options=EngineOptions(checkpointer=checkpointer(), workflows=workflows))
        engine.compile(workflow)
        return engine

    def run(engine: Engine) -> Any:
        result = None
        for value in inputs:
            result = engine.run(workflow, value)
            if result.status != "completed":
                raise RuntimeError(f"{who} {workflow.id}: {result.status} {result.error}")
        if close is not None:
            close(engine.checkpointer)
        return result.output if result is not None else None

    return prepare, run


# ---------------------------------------------------------------------------
# Through the designer's real worker (bench_worker_items, bench_distributed, bench_workers, bench_history's ORM leg)
#
# A bench runs one "leg" per database in a child process (Django reads DATABASE_URL once, at import), which
# prints its rows as one ``BENCH-ROWS <json>`` line; the parent prints the table.

TICKS = os.sysconf("SC_CLK_TCK")
_BENCH_SECRET = secrets.token_urlsafe(50)  # debug off needs a real key; a bench database is thrown away
TERMINAL = ("completed", "failed", "cancelled")


def leg_env(**extra: str) -> dict[str, str]:
    """The environment of a leg or a worker: this checkout first on the path, the designer's settings, debug off.

    Debug off as in production: with it on, Django records every query (and on SQLite runs one more to quote its
    parameters), about 3% of a worker's time that no deployment pays."""
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DJANGO_SETTINGS_MODULE": "designer.settings",
            "DJANGO_DEBUG": "false", "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY", _BENCH_SECRET), **extra}


def run_leg(module: str, env: dict[str, str], *, flag: str = "--leg", prefix: Sequence[str] = ()) -> Any:
    """Run ``python -m <module> <flag>`` (behind ``prefix``, e.g. ``.ci/postgres.sh``) and return its rows."""
    done = subprocess.run([*prefix, sys.executable, "-m", module, flag], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("BENCH-ROWS "):
            return json.loads(line.removeprefix("BENCH-ROWS "))
    raise RuntimeError(f"benchmark leg {module} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def postgres_available() -> bool:
    """PostgreSQL's server binaries are installed, so ``.ci/postgres.sh`` can start a private cluster."""
    return shutil.which("initdb") is not None or any(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


def run_postgres_leg(module: str, env: dict[str, str]) -> Any:
    """``run_leg`` on a private, throw-away PostgreSQL cluster (``.ci/postgres.sh``)."""
    return run_leg(module, env, prefix=[str(REPO_ROOT / ".ci" / "postgres.sh")])


def run_sqlite_leg(module: str, env: dict[str, str], *, flag: str = "--leg") -> Any:
    """``run_leg`` on a fresh SQLite database in a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        return run_leg(module, {**env, "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3"}, flag=flag)


def leg_or_main(leg: Callable[[], None], main: Callable[[], int], *, flag: str = "--leg") -> None:
    """A bench module's ``__main__``: its leg when run with ``flag`` (by ``run_leg``), else its table."""
    if sys.argv[1:] == [flag]:
        leg()
    else:
        sys.exit(main())


def print_rows(rows: Any) -> None:
    """A leg's result, for ``run_leg``."""
    print("BENCH-ROWS " + json.dumps(rows), flush=True)


def django_leg() -> None:
    """In a leg: configure Django and migrate the leg's database."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "designer.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def setup_leg() -> tuple[Any, Any]:
    """``django_leg``, then a bench user and its team."""
    django_leg()
    from django.contrib.auth import get_user_model

    from designer.access import teams as team_services

    user = get_user_model().objects.create_user("bench", password="x")
    return user, team_services.create_team(actor=user, name="Bench")


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and all its live descendants (a worker and its step processes), with the
    children each has reaped."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = fields
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        found = stats.get(current)
        if found is not None:
            total += int(found[11]) + int(found[12]) + int(found[13]) + int(found[14])
        todo.extend(children.get(current, ()))
    return total / TICKS


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory (VmHWM) in MiB: the worker's own, where a run's state lives (its step
    processes are forks that hold no run state)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def postmaster() -> int | None:
    """In a leg: the PostgreSQL server's pid (the parent of this connection's backend), None on SQLite."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])


def db_cpu(server: int | None) -> float:
    """CPU seconds of the whole PostgreSQL server (its backends too); 0 on SQLite, which works inside the worker."""
    return 0.0 if server is None else tree_cpu(server)


@dataclass(frozen=True, slots=True)
class Measured:
    """Runs enqueued together, from enqueueing to the last one's end."""

    pks: list[int]
    wall: float  # seconds
    worker_cpu: float  # seconds, the worker processes with their step processes
    db_cpu: float  # seconds, the PostgreSQL server (0 on SQLite)
    worker_peak_mib: float = 0.0  # the largest peak RSS of one worker process so far (VmHWM)

    def figures(self) -> dict[str, float]:
        return {"wall": self.wall, "worker_cpu": self.worker_cpu, "db_cpu": self.db_cpu,
                "worker_peak_mib": self.worker_peak_mib}


@dataclass(frozen=True, slots=True)
class Workers:
    """``run_worker`` processes started by ``workers``, ready to take runs."""

    processes: list[subprocess.Popen[bytes]]
    server: int | None

    def cpu(self) -> float:
        return sum(tree_cpu(process.pid) for process in self.processes)

    def measure(self, start: Callable[[], Sequence[int]], *, poll: float = 0.2) -> Measured:
        """Enqueue runs (``start`` returns their pks) and wait for them all to end; refuse any that did not
        complete (a benchmark of a broken run measures nothing). The workers' CPU is sampled while waiting:
        a step process replaced mid-way takes its CPU with it."""
        from designer.models import Run

        cpu = before = self.cpu()
        db_before = db_cpu(self.server)
        began = time.perf_counter()
        pks = list(start())
        while Run.objects.filter(pk__in=pks, status__in=TERMINAL).count() < len(pks):
            cpu = max(cpu, self.cpu())
            time.sleep(poll)
        wall = time.perf_counter() - began
        cpu = max(cpu, self.cpu())
        for pk, status, error in Run.objects.filter(pk__in=pks).exclude(status="completed").values_list(
                "pk", "status", "error"):
            raise RuntimeError(f"benchmark run {pk} ended {status}: {error}")
        peak = max(peak_rss_mib(process.pid) for process in self.processes)
        return Measured(pks, wall, cpu - before, db_cpu(self.server) - db_before, peak)


@contextmanager
def workers(count: int, env: dict[str, str], *, server: int | None = None, interval: float = 0.2,
            command: str = "run_worker", kill: bool = False) -> Iterator[Workers]:
    """Start ``count`` worker processes (``command``: ``run_worker``, or the peer's ``db_worker``) and wait until
    each has imported Django, forked its step processes and started polling (a worker still starting when a run
    is enqueued would count its start-up as work on the run); stop them on the way out, or with ``kill`` kill
    each with its step processes (a graceful stop would wait for hostile steps). ``server``: the PostgreSQL
    postmaster, for ``measure``. The leg's own connection is closed first, so no worker inherits it."""
    from django.db import connection

    connection.close()
    argv = [sys.executable, "manage.py", command, "--no-startup-delay", "--no-reload", "--interval", str(interval)]
    with ExitStack() as stack:
        logs = [stack.enter_context(tempfile.NamedTemporaryFile("w+", prefix="trellis-bench-worker-",
                                                                suffix=".log")) for _ in range(count)]
        processes = [subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=kill) for log in logs]
        try:
            deadline = time.monotonic() + 300
            while not all("Starting worker" in Path(log.name).read_text() for log in logs):
                if time.monotonic() > deadline or any(process.poll() is not None for process in processes):
                    raise RuntimeError("a benchmark worker did not start:\n"
                                       + "\n".join(Path(log.name).read_text()[-2000:] for log in logs))
                time.sleep(0.2)
            yield Workers(processes, server)
        finally:
            for process in processes:
                if kill:
                    os.killpg(process.pid, signal.SIGKILL)  # the worker and its step processes
                else:
                    process.terminate()
            for process in processes:
                process.wait()


def items_foreach(name: str, concurrency: int = 1, *, collect: bool = True, batch_size: int | None = None,
                  max_batches_in_flight: int | None = None) -> dict[str, Any]:
    """A designer document: a foreach over ``input.items`` (integers), a math step adding 1 to each, the
    results collected in the output's ``out`` when ``collect``; distributed when ``batch_size`` is set (and the
    server's threshold allows)."""
    graph = WorkflowBuilder(f"bench-{name.lower()}", name, input_schema={
        "type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}}}})
    each = graph.foreach("each", "input.items", results="out" if collect else None, max_concurrency=concurrency,
                         batch_size=batch_size, max_batches_in_flight=max_batches_in_flight)
    body = graph.use("math", id="body", input=[{"target": "op", "value": "add"}, {"target": "a", "path": each.item},
                                              {"target": "b", "value": 1}])
    graph.chain(each, "loop", body, "ok", each)
    if collect:
        graph.output("out", "state.out")
    return graph.build().model_dump(mode="json")


def trellis_chain(length: int) -> Workflow:
    g = WorkflowBuilder("bench-chain", state_schema=COUNTER_STATE)
    previous = None
    for i in range(length):
        node = g.use("inc", f"n{i}", input=[{"target": "x", "path": "state.x"}],
                     output=[{"source": ".", "target": "x"}])
        if previous is not None:
            g.set_route(previous, "ok", node)
        previous = node
    g.output("x", "state.x")
    return g.build()


def trellis_loop(limit: int) -> Workflow:
    g = WorkflowBuilder("bench-loop", state_schema=COUNTER_STATE)
    node = g.use("count", "step", input=[{"target": "x", "path": "state.x"}, {"target": "limit", "value": limit}],
                 output=[{"source": ".", "target": "x"}])
    g.set_route(node, "again", node)  # the back-edge
    g.output("x", "state.x")
    return g.build()


def _each_item(workflow_id: str, body: Callable[[WorkflowBuilder, Any], Any]) -> Workflow:
    """A foreach over ``input.items`` whose body is the one node ``body(builder, item_path)`` adds."""
    g = WorkflowBuilder(workflow_id, input_schema={"type": "object", "properties": {"items": {"type": "array"}}})
    each = g.foreach("each", "input.items")
    g.chain(each, "loop", body(g, each.item), "ok", each)
    return g.build()


def trellis_foreach() -> Workflow:
    return _each_item("bench-foreach", lambda g, item: g.use("touch", "body", input=[{"target": "x", "path": item}]))


def trellis_nested() -> Workflow:
    g = WorkflowBuilder("bench-nested", input_schema={"type": "object", "properties": {"rows": {"type": "array"}}})
    rows = g.foreach("rows", "input.rows")
    cells = g.foreach("cells", rows.item)
    body = g.use("touch", "body", input=[{"target": "x", "path": cells.item}])
    g.chain(rows, "loop", cells, "loop", body, "ok", cells, "done", rows)
    return g.build()


def trellis_subgraph_child() -> Workflow:
    """The child a subgraph call runs: one node reading its input's ``x``."""
    g = WorkflowBuilder("bench-child", input_schema={"type": "object", "properties": {"x": {}}})
    g.use("touch", "body", input=[{"target": "x", "path": "input.x"}])
    return g.build()


def trellis_subgraph() -> Workflow:
    """A foreach over ``input.items`` whose body calls ``trellis_subgraph_child`` with each item."""
    return _each_item("bench-subgraph",
                      lambda g, item: g.subgraph("bench-child", "call", input=[{"target": "x", "path": item}]))


def trellis_loop_then_pause(limit: int) -> Workflow:
    """Loops ``limit`` times, then waits at an interrupt; resuming runs one more task."""
    g = WorkflowBuilder("bench-pause", state_schema=COUNTER_STATE)
    step = g.use("count", "step", input=[{"target": "x", "path": "state.x"}, {"target": "limit", "value": limit}],
                 output=[{"source": ".", "target": "x"}])
    ask = g.interrupt("ask", prompt="continue?", resume_schema={"type": "object"})
    finish = g.use("inc", "finish", input=[{"target": "x", "path": "state.x"}], output=[{"source": ".", "target": "x"}])
    g.chain(step, "again", step, "done", ask, "ok", finish)
    g.output("x", "state.x")
    return g.build()


def trellis_foreach_then_pause() -> Workflow:
    """A foreach over ``input.items``, then an interrupt: the finished activation must leave no trace in RunState."""
    g = WorkflowBuilder("bench-foreach-pause", state_schema=COUNTER_STATE,
                        input_schema={"type": "object", "properties": {"items": {"type": "array"}}})
    each = g.foreach("each", "input.items")
    body = g.use("touch", "body", input=[{"target": "x", "path": each.item}])
    ask = g.interrupt("ask", prompt="continue?", resume_schema={"type": "object"})
    finish = g.use("inc", "finish", input=[{"target": "x", "path": "state.x"}], output=[{"source": ".", "target": "x"}])
    g.chain(each, "loop", body, "ok", each, "done", ask, "ok", finish)
    g.output("x", "state.x")
    return g.build()


def trellis_deep(depth: int) -> Workflow:
    """``depth`` nested foreach nodes, each over its parent item's ``children``; the innermost body pauses."""
    g = WorkflowBuilder("bench-deep", input_schema={"type": "object", "properties": {"tree": {"type": "array"}}})
    loops: list[ForeachNode] = []
    for level in range(1, depth + 1):
        over = "input.tree" if level == 1 else loops[-1].item.child("children")
        loops.append(g.foreach(f"f{level}", over, as_=f"level{level}"))
    ask = g.interrupt("ask", prompt="deep", input=[{"target": "where", "path": loops[-1].index}])
    for outer, inner in zip(loops, loops[1:], strict=False):
        g.chain(outer, "loop", inner, "done", outer)
    g.chain(loops[-1], "loop", ask, "ok", loops[-1])
    return g.build()


def deep_tree(depth: int) -> list[dict[str, Any]]:
    node: dict[str, Any] = {"name": f"leaf{depth}"}
    for level in range(depth - 1, 0, -1):
        node = {"name": f"level{level}", "children": [node]}
    return [node]


# ---------------------------------------------------------------------------
# LangGraph graphs (imported lazily: LangGraph is a bench-only dependency)


class _Counter(TypedDict):
    x: int


class _Items(TypedDict):
    items: list[Any]


class _Rows(TypedDict):
    rows: list[list[Any]]


class _Item(TypedDict):
    item: Any


class _Row(TypedDict):
    row: list[Any]


class _Nothing(TypedDict):
    """A subgraph's output that writes nothing back to its caller's state (as Trellis's with no output binding)."""


def _inc(state: _Counter) -> dict[str, Any]:
    return {"x": state["x"] + 1}


def _touch(state: _Item) -> dict[str, Any]:
    state["item"] * 2
    return {}


def _noop(state: Any) -> dict[str, Any]:
    return {}


def langgraph_chain(length: int) -> Any:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(_Counter)
    for i in range(length):
        g.add_node(f"n{i}", _inc)
        g.add_edge(START if i == 0 else f"n{i - 1}", f"n{i}")
    g.add_edge(f"n{length - 1}", END)
    return g


def langgraph_loop(limit: int) -> Any:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(_Counter)
    g.add_node("step", _inc)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["x"] < limit else END, ["step", END])
    return g


def langgraph_foreach() -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    g = StateGraph(_Items)
    g.add_node("each", _noop)
    g.add_node("body", _touch, input_schema=_Item)
    g.add_edge(START, "each")
    g.add_conditional_edges("each", lambda s: [Send("body", {"item": i}) for i in s["items"]], ["body"])
    g.add_edge("body", END)
    return g


def langgraph_subgraph() -> Any:
    """``langgraph_foreach`` whose body is a compiled one-node graph, called as a subgraph for each item."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    child = StateGraph(_Item, output_schema=_Nothing)
    child.add_node("body", _touch)
    child.add_edge(START, "body")
    child.add_edge("body", END)
    g = StateGraph(_Items)
    g.add_node("each", _noop)
    g.add_node("call", child.compile(), input_schema=_Item)
    g.add_edge(START, "each")
    g.add_conditional_edges("each", lambda s: [Send("call", {"item": i}) for i in s["items"]], ["call"])
    g.add_edge("call", END)
    return g


def langgraph_nested() -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, Send

    def row(state: _Row) -> Any:
        return Command(goto=[Send("body", {"item": v}) for v in state["row"]])

    g = StateGraph(_Rows)
    g.add_node("rows", _noop)
    g.add_node("cells", row, input_schema=_Row, destinations=("body",))
    g.add_node("body", _touch, input_schema=_Item)
    g.add_edge(START, "rows")
    g.add_conditional_edges("rows", lambda s: [Send("cells", {"row": r}) for r in s["rows"]], ["cells"])
    g.add_edge("body", END)
    return g
