"""Distributed foreach (``runtime._batches``): batches run apart from their run, then are joined back.

The bar: what a distributed foreach produces (results in index order, the structured context each item saw,
nested loops included, tolerated and reported failures) is what the same foreach produces inside one run.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from runtime import Engine, RunResult, RunState, Workflow, WorkflowBuilder
from runtime.checkpoint import HistoryPolicy, InMemoryCheckpointer
from runtime.document import ForeachNode
from runtime.engine import EngineOptions, ItemOutcome, distributed_foreach
from runtime.errors import RedriveError
from runtime.state import RuntimeContext, SequentialIds, TraceEvent, parse_run_state
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import loop_then_total

CUSTOMERS = [
    {"name": "Ada", "orders": [{"sku": "A1", "lines": [1, 2]}, {"sku": "A2", "lines": [3]},
                               {"sku": "A3", "lines": []}, {"sku": "A4", "lines": [4, 5, 6]},
                               {"sku": "A5", "lines": [7]}]},
    {"name": "Bob", "orders": [{"sku": "B1", "lines": [8]}]},
    {"name": "Cy", "orders": []},
]


def registry(calls: list[Any] | None = None) -> TaskRegistry:
    reg = TaskRegistry()

    @reg.task
    def describe(line: int, ctx: RuntimeContext) -> dict[str, Any]:
        """What the item saw: every structured entry (minus the per-frame ids) and the convenience fields."""
        if calls is not None:
            calls.append(line)
        entries = {key: {"node_id": e.node_id, "index": e.index, "item": e.item, "scope_id": e.scope_id}
                   for key, e in ctx.foreach.items()}
        mapping = ctx.to_mapping()
        return {"line": line, "entries": entries, "order": list(ctx.foreach), "loop_index": mapping["loop_index"],
                "aliases": {alias: mapping[alias] for alias in ("customer", "order", "line_no") if alias in mapping}}

    @reg.task
    def check(x: int, ctx: RuntimeContext) -> int:
        if calls is not None:
            calls.append(x)
        if x % 4 == 1:
            raise ValueError(f"item {ctx.foreach['xs'].index} is bad: {x}")
        return x * 10

    return reg


def orders_and_lines(graph: WorkflowBuilder, over: str, *, results: str, batch_size: int) -> ForeachNode:
    """orders over ``over`` (distributable, two at once) > lines (local, inside the batch) > describe."""
    orders = graph.foreach("orders", over, as_="order", max_concurrency=2, results=results, batch_size=batch_size,
                           max_batches_in_flight=2)
    lines = graph.foreach("lines", "context.foreach.orders.item.lines", as_="line_no", results="last_lines")
    describe = graph.use("describe", id="describe", input=[{"target": "line", "path": lines.item}])
    for source, label, target in ((orders, "loop", lines), (lines, "loop", describe), (describe, "ok", lines),
                                  (lines, "done", orders)):
        graph.set_route(source, label, target)
    return orders


def nested(batch_size: int = 2) -> Workflow:
    """customers (local) > orders (distributable) > lines (local, inside the batch) > describe."""
    graph = WorkflowBuilder("nested", input_schema={"type": "object", "properties": {"customers": {"type": "array"}},
                                                    "required": ["customers"]})
    customers = graph.foreach("customers", "input.customers", as_="customer", results="per_customer")
    orders = orders_and_lines(graph, "context.foreach.customers.item.orders", results="last_orders",
                              batch_size=batch_size)
    graph.chain(customers, "loop", orders, "done", customers)
    graph.output("per_customer", "state.per_customer")
    return graph.build()


def engine(calls: list[Any] | None = None, *, distribute: bool = False) -> Engine:
    return Engine(registry=registry(calls), options=EngineOptions(ids=SequentialIds(),
                  distribute=(lambda node, n: True) if distribute else None))


def run_distributed(eng: Engine, doc: Workflow, run_input: Any, *, batches: list[Any] | None = None,
                    trace: list[TraceEvent] | None = None) -> RunResult:
    """Drive a run to its end as a host would: every batch of every waiting activation, then the join. ``trace``
    collects the run's events and its items' (``ItemOutcome.events``), as a host stores them."""
    result = eng.run(doc, run_input)
    if trace is not None:
        trace.extend(result.trace)
    while result.status == "waiting":
        state = RunState.from_json(result.run_state.to_json())  # as a worker loads the checkpoint
        joins: dict[str, list[ItemOutcome]] = {}
        for waiting in distributed_foreach(state):
            outcomes: list[ItemOutcome] = []
            for start, stop in waiting.batches():
                stored = parse_run_state(state.to_json())
                batch = eng.run_batch(stored, waiting.activation_id, range(start, stop), workflow=doc)
                assert batch.status == "completed"
                outcomes.extend(batch.outcomes)
                if trace is not None:
                    trace.extend(event for outcome in batch.outcomes for event in outcome.events)
                if batches is not None:
                    batches.append((waiting.node_id, start, stop))
            joins[waiting.activation_id] = outcomes
        result = eng.join_foreach(parse_run_state(state.to_json()), joins, workflow=doc)
        if trace is not None:
            trace.extend(result.trace)
    return result


def test_a_distributed_foreach_gives_what_one_run_gives_with_the_same_context_per_item() -> None:
    doc = nested()
    local = engine().run(doc, {"customers": CUSTOMERS})
    assert local.status == "completed", local.error
    batches: list[Any] = []
    spread = run_distributed(engine(distribute=True), doc, {"customers": CUSTOMERS}, batches=batches)
    assert spread.status == "completed", spread.error
    assert spread.output == local.output
    # Ada's 5 orders in batches of 2, Bob's 1 order in one; Cy has none (done at once, nothing distributed).
    assert batches == [("orders", 0, 2), ("orders", 2, 4), ("orders", 4, 5), ("orders", 0, 1)]
    ada = spread.output["per_customer"][0]
    assert [[line["line"] for line in order] for order in ada] == [[1, 2], [3], [], [4, 5, 6], [7]]
    seen = ada[3][1]  # customer 0, order 3, line 1
    assert seen["order"] == ["customers", "orders", "lines"]
    assert seen["entries"]["customers"]["index"] == 0 and seen["entries"]["customers"]["item"]["name"] == "Ada"
    assert seen["entries"]["orders"] == {"node_id": "orders", "index": 3, "item": CUSTOMERS[0]["orders"][3],
                                         "scope_id": "root"}
    assert seen["entries"]["lines"]["index"] == 1 and seen["loop_index"] == 1
    assert seen["aliases"] == {"customer": CUSTOMERS[0], "order": CUSTOMERS[0]["orders"][3], "line_no": 5}


def test_a_waiting_run_is_a_valid_checkpoint_that_holds_no_item_frames() -> None:
    doc = nested(batch_size=3)
    result = engine(distribute=True).run(doc, {"customers": CUSTOMERS})
    assert result.status == "waiting"
    state = RunState.from_json(result.run_state.to_json())  # the integrity check accepts it
    [waiting] = distributed_foreach(state)
    assert (waiting.node_id, waiting.total, waiting.batch_size, waiting.in_flight) == ("orders", 5, 3, 2)
    assert waiting.batches() == [(0, 3), (3, 5)]
    assert not [f for f in state.frames.values() if f.metadata.get("foreach", {}).get("node_id") == "orders"]
    kinds = [event.kind for event in result.trace]
    assert "foreach_distributed" in kinds and kinds[-1] == "run_waiting"
    again = engine(distribute=True).continue_run(parse_run_state(state.to_json()), workflow=doc)
    assert again.status == "waiting"  # nothing to do until the batches are joined


def test_without_a_batch_size_or_a_yes_from_the_host_the_foreach_runs_in_its_run() -> None:
    doc = nested(batch_size=2)
    plain = doc.model_copy(update={"nodes": [n.model_copy(update={"batch_size": None}) if isinstance(n, ForeachNode)
                                             else n for n in doc.nodes]})
    assert engine(distribute=True).run(plain, {"customers": CUSTOMERS}).status == "completed"
    refusing = Engine(registry(), EngineOptions(ids=SequentialIds(), distribute=lambda node, n: n > 10))
    assert refusing.run(doc, {"customers": CUSTOMERS}).status == "completed"


def tolerant(count: int | None = None, percentage: float | None = None) -> Workflow:
    graph = WorkflowBuilder("tolerant", input_schema={"type": "object", "properties": {"xs": {"type": "array"}}})
    xs = graph.foreach("xs", "input.xs", results="out", batch_size=3, max_concurrency=2,
                       tolerated_failure_count=count, tolerated_failure_percentage=percentage)
    check = graph.use("check", id="check", input=[{"target": "x", "path": xs.item}])
    graph.chain(xs, "loop", check, "ok", xs)
    graph.output("out", "state.out")
    return graph.build()


XS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]  # 1, 5 and 9 fail


@pytest.mark.parametrize("distribute", [False, True], ids=["one run", "distributed"])
def test_tolerated_failures_leave_null_results_and_beyond_them_the_foreach_fails_naming_the_items(
        distribute: bool) -> None:
    def go(doc: Workflow) -> RunResult:
        eng = engine(distribute=distribute)
        return run_distributed(eng, doc, {"xs": XS}) if distribute else eng.run(doc, {"xs": XS})

    passed = go(tolerant(count=3))
    assert passed.status == "completed", passed.error
    assert passed.output == {"out": [0, None, 20, 30, 40, None, 60, 70, 80, None]}
    completed = [e for e in passed.trace if e.kind == "foreach_completed"]
    assert completed[-1].summary == {"total": 10, "done": 10, "failed": 3}

    for doc in (tolerant(count=2), tolerant(percentage=25), *([tolerant()] if distribute else [])):
        failed = go(doc)
        assert failed.status == "failed"
        assert failed.error is not None
        cause = failed.error.details["cause"]
        assert cause["code"] == "foreach.items_failed"
        assert cause["failed"] == [1, 5, 9] and cause["total"] == 10
        assert "3 of 10 items failed (items 1, 5, 9)" in failed.error.message
        assert "item 1: ValueError: item 1 is bad: 1" in failed.error.message
        assert [e["index"] for e in cause["errors"]] == [1, 5, 9]
    assert go(tolerant(percentage=30)).status == "completed"
    if not distribute:  # with no tolerance set, one run fails at the first failed item, as it always has
        first = go(tolerant())
        assert first.status == "failed" and first.error is not None
        assert first.error.details["index"] == 1 and first.error.details["node_id"] == "check"


def test_a_batch_hands_over_items_as_they_end_and_a_restarted_batch_runs_only_what_was_not_committed() -> None:
    doc = tolerant(count=5)
    calls: list[Any] = []
    eng = engine(calls, distribute=True)
    state = RunState.from_json(eng.run(doc, {"xs": XS}).run_state.to_json())
    [waiting] = distributed_foreach(state)
    committed: dict[int, ItemOutcome] = {}

    class Crash(Exception):
        pass

    def commit_once(outcomes: tuple[ItemOutcome, ...]) -> None:
        committed.update((o.index, o) for o in outcomes)
        raise Crash  # the worker dies right after its first commit

    with pytest.raises(Crash):
        eng.run_batch(parse_run_state(state.to_json()), waiting.activation_id, range(0, 3), workflow=doc,
                      on_items=commit_once)
    assert sorted(committed) == [0, 1]  # two items at a time (max_concurrency 2) ended in the first superstep
    assert committed[1].failed and committed[1].error is not None and committed[1].error["index"] == 1
    calls.clear()
    left = [i for i in range(10) if i not in committed]
    rest = eng.run_batch(parse_run_state(state.to_json()), waiting.activation_id, left, workflow=doc)
    assert rest.status == "completed" and sorted(o.index for o in rest.outcomes) == left
    assert sorted(calls) == sorted(XS[i] for i in left)  # the committed items did not run again
    done = eng.join_foreach(parse_run_state(state.to_json()),
                            {waiting.activation_id: [*committed.values(), *rest.outcomes]}, workflow=doc)
    assert done.status == "completed"
    assert done.output == {"out": [0, None, 20, 30, 40, None, 60, 70, 80, None]}


def stored_batch(state: RunState | None) -> RunState:
    """A waiting batch's state as a host stores and reads it back (its format only, as the designer does)."""
    assert state is not None
    return RunState.model_validate_json(state.model_dump_json())


def test_joining_needs_every_item_exactly_once() -> None:
    doc = tolerant(count=5)
    eng = engine(distribute=True)
    state = eng.run(doc, {"xs": XS}).run_state
    [waiting] = distributed_foreach(state)
    some = [ItemOutcome(i, i) for i in range(9)]
    with pytest.raises(Exception, match="1 of 10 item outcomes are missing \\(the first is item 9\\)"):
        eng.join_foreach(state, {waiting.activation_id: some}, workflow=doc)
    with pytest.raises(Exception, match="item outcome 3 is repeated"):
        eng.join_foreach(state, {waiting.activation_id: [*some, ItemOutcome(3, 3)]}, workflow=doc)
    with pytest.raises(Exception, match="not waiting"):
        eng.join_foreach(engine().run(doc, {"xs": [0]}).run_state, {}, workflow=doc)



def test_a_failure_deep_inside_a_tolerant_item_fails_that_item_and_drops_its_inner_loop() -> None:
    graph = WorkflowBuilder("deep", input_schema={"type": "object", "properties": {"xs": {"type": "array"}}})
    outer = graph.foreach("outer", "input.xs", results="out", tolerated_failure_count=1)
    xs = graph.foreach("xs", "context.foreach.outer.item", results="inner", max_concurrency=3)
    check = graph.use("check", id="check", input=[{"target": "x", "path": xs.item}])
    graph.chain(outer, "loop", xs, "loop", check, "ok", xs, "done", outer)
    graph.output("out", "state.out")
    result = engine().run(graph.build(), {"xs": [[0, 2], [3, 5, 6, 7], [8]]})  # item 1 holds 5, which fails
    assert result.status == "completed", result.error
    assert result.output == {"out": [[0, 20], None, [80]]}
    assert not result.run_state.activations and not result.run_state.barriers
    failed = [e for e in result.trace if e.kind == "item_failed"]
    assert [(e.node_id, e.index) for e in failed] == [("outer", 1)]


# -- a batch whose items back off ends "waiting" instead of sleeping -------------------------------------------


def test_a_batch_whose_items_back_off_waits_without_sleeping_and_continues_from_its_own_state() -> None:
    now = [1_000.0]
    calls: list[tuple[int, int]] = []
    reg = TaskRegistry()

    @reg.task
    def flaky(x: int, ctx: RuntimeContext) -> int:
        calls.append((x, ctx.attempt))
        if x % 2 and ctx.attempt < 3:  # odd items fail twice, then succeed
            raise RuntimeError(f"item {x}: attempt {ctx.attempt} failed")
        return 10 * x

    g = WorkflowBuilder("spread", input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "integer"}}}})
    each = g.foreach("each", "input.xs", results="out", batch_size=4, max_concurrency=2)
    work = g.use("flaky", id="work", input=[{"target": "x", "path": each.item}],
                 retry={"max_attempts": 3, "backoff_seconds": 30, "backoff_multiplier": 2})
    g.chain(each, "loop", work, "ok", each)
    doc = g.build()
    engine = Engine(registry=reg, options=EngineOptions(ids=SequentialIds(), distribute=lambda node, items: True,
                                                        sleep_in_process=False, clock=lambda: now[0]))
    waiting = engine.run(doc, {"xs": list(range(6))})
    assert waiting.status == "waiting"
    (activation,) = distributed_foreach(waiting.run_state)
    committed: list[ItemOutcome] = []

    first = engine.run_batch(waiting.run_state, activation.activation_id, [0, 1, 2, 3], on_items=committed.extend)
    # Item 0 ended; item 1 backs off 30 s (attempt 2 due at 1030) and item 2 ran, item 3 backs off too: all
    # the running items sleep, so the batch returns rather than sleeping in this process.
    assert first.status == "waiting" and first.wake_at == 1_030.0
    assert [outcome.index for outcome in committed] == [0, 2]
    assert first.state is not None and set(first.state.wakeups) and first.outcomes == tuple(committed)

    # Before the wake-up time a continuation runs nothing and waits again for the same time.
    before = len(calls)
    again = engine.continue_batch(stored_batch(first.state), activation.activation_id, on_items=committed.extend,
                                  held=first.held)
    assert (again.status, again.wake_at, len(calls)) == ("waiting", 1_030.0, before)

    now[0] = 1_030.0  # attempt 2 of items 1 and 3: fails again, next backoff 60 s
    second = engine.continue_batch(stored_batch(again.state), activation.activation_id,
                                   on_items=committed.extend, held=again.held)
    assert second.status == "waiting" and second.wake_at == 1_090.0
    now[0] = 1_090.0
    third = engine.continue_batch(stored_batch(second.state), activation.activation_id,
                                  on_items=committed.extend, held=second.held)
    assert third.status == "completed"
    assert sorted((outcome.index, outcome.result) for outcome in committed) == [(i, 10 * i) for i in range(4)]
    # Each attempt ran once: the retry count survived the batch's waits (attempt 3 succeeded, no restart at 1).
    assert sorted(calls) == sorted([(0, 1), (2, 1), (1, 1), (1, 2), (1, 3), (3, 1), (3, 2), (3, 3)])
    # Each item's outcome carries its whole trace, the part made before the batch's waits included (``held``).
    assert {index for index, _ in first.held} == {1, 3}  # the items still running when it first waited
    for outcome in committed:
        kinds = Counter((event.kind, event.attempt) for event in outcome.events
                        if event.kind != "node_started")  # its attempt is told by what it ended with
        retried = outcome.index % 2
        assert kinds == Counter({("item_started", None): 1, ("item_completed", None): 1,
                                 ("node_completed", 3 if retried else 1): 1}
                                | ({("node_retrying", 1): 1, ("node_retrying", 2): 1, ("node_waiting", 2): 1,
                                    ("node_waiting", 3): 1} if retried else {})), (outcome.index, kinds)
        assert {(event.activation_id, event.index) for event in outcome.events} == {
            (activation.activation_id, outcome.index)}


def orders_child(batch_size: int = 2) -> Workflow:
    """A subgraph: orders (distributable) > lines (local, inside the batch) > describe; outputs its results."""
    graph = WorkflowBuilder("orders-child", input_schema={
        "type": "object", "properties": {"orders": {"type": "array"}}, "required": ["orders"]})
    orders_and_lines(graph, "input.orders", results="per_order", batch_size=batch_size)
    graph.output("per_order", "state.per_order")
    return graph.build()


def calling_parent() -> Workflow:
    """customers (local, 2 at once) > a call of ``orders-child`` per customer; the calls' outputs collected."""
    graph = WorkflowBuilder("calling", input_schema={"type": "object", "properties": {"customers": {"type": "array"}},
                                                     "required": ["customers"]})
    customers = graph.foreach("customers", "input.customers", as_="customer", max_concurrency=2,
                              results="per_customer")
    call = graph.subgraph("orders-child", id="call",
                          input=[{"target": "orders", "path": "context.foreach.customers.item.orders"}])
    graph.chain(customers, "loop", call, "ok", customers)
    graph.output("per_customer", "state.per_customer")
    return graph.build()


def _without_scope_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_scope_ids(v) for k, v in value.items() if k != "scope_id"}
    if isinstance(value, list):
        return [_without_scope_ids(v) for v in value]
    return value


def test_a_foreach_inside_a_subgraph_call_is_distributed_like_a_top_level_one() -> None:
    doc, workflows = calling_parent(), {"orders-child": orders_child()}
    local = Engine(registry(), EngineOptions(
        ids=SequentialIds(), workflows=workflows)).run(doc, {"customers": CUSTOMERS})
    assert local.status == "completed", local.error
    calls: list[Any] = []
    batches: list[Any] = []
    spread_engine = Engine(registry=registry(calls), options=EngineOptions(ids=SequentialIds(), workflows=workflows,
                                                                           distribute=lambda node, n: True))
    spread = run_distributed(spread_engine, doc, {"customers": CUSTOMERS}, batches=batches)
    assert spread.status == "completed", spread.error
    # The child's orders ran as batches: Ada's 5 orders in batches of 2, Bob's 1 in one; Cy has none.
    assert sorted(batches) == sorted([("orders", 0, 2), ("orders", 2, 4), ("orders", 4, 5), ("orders", 0, 1)])
    assert sorted(calls) == [1, 2, 3, 4, 5, 6, 7, 8]  # every line described exactly once
    # Results in index order, each item with the structured context of one run (scope ids are minted in a
    # different order when the calls wait for batches, so they are compared apart).
    assert _without_scope_ids(spread.output) == _without_scope_ids(local.output)
    ada = spread.output["per_customer"][0]["per_order"]
    assert [[line["line"] for line in order] for order in ada] == [[1, 2], [3], [], [4, 5, 6], [7]]
    seen = ada[3][1]  # order 3, line 1, inside Ada's call
    assert seen["order"] == ["orders", "lines"]  # a subgraph sees its own loops, not its caller's
    assert seen["entries"]["orders"]["item"] == CUSTOMERS[0]["orders"][3] and seen["entries"]["orders"]["index"] == 3
    assert seen["aliases"] == {"order": CUSTOMERS[0]["orders"][3], "line_no": 5}
    scopes = {line["entries"]["orders"]["scope_id"] for order in ada for line in order}
    assert len(scopes) == 1 and scopes != {"root"}


# -- redriving the tolerated failed items of a completed run -----------------------------------------------


def flaky_registry(calls: Counter[int], fail: set[int]) -> TaskRegistry:
    reg = TaskRegistry()

    @reg.task
    def check(x: int) -> int:
        calls[x] += 1
        if x in fail and calls[x] == 1:
            raise ConnectionError(f"{x}: service unavailable")
        return x * 10

    @reg.task
    def total(values: list[Any]) -> dict[str, Any]:
        return {"sum": sum(v for v in values if v is not None), "missing": sum(v is None for v in values)}

    return reg


def tolerant_then_total() -> Workflow:
    """The tolerant distributed foreach, then a node downstream that reads its result list."""
    graph = WorkflowBuilder("tolerant-total", input_schema={"type": "object", "properties": {"xs": {"type": "array"}}},
                            state_schema={"type": "object", "properties": {"out": {}, "summary": {}}})
    xs = graph.foreach("xs", "input.xs", results="out", batch_size=3, max_concurrency=2, tolerated_failure_count=3)
    check = graph.use("check", id="check", input=[{"target": "x", "path": xs.item}])
    loop_then_total(graph, xs, check, "total", id="total", results="state.out", target="summary")
    graph.output("out", "state.out")
    graph.output("summary", "state.summary")
    return graph.build()


def test_a_completed_runs_tolerated_failed_items_are_redriven_and_downstream_sees_the_new_results() -> None:
    doc = tolerant_then_total()
    calls: Counter[int] = Counter()
    cp = InMemoryCheckpointer(history=HistoryPolicy())
    eng = Engine(registry=flaky_registry(calls, {1, 5, 9}), options=EngineOptions(ids=SequentialIds(), checkpointer=cp,
                                                                                  distribute=lambda node, n: True))
    kept: dict[int, ItemOutcome] = {}  # the host's committed items (the designer's ForeachBatchItem rows)
    trace: list[Any] = []

    def drive(result: RunResult, only: list[int] | None = None) -> RunResult:
        trace.extend(result.trace)
        while result.status == "waiting":
            [waiting] = distributed_foreach(result.run_state)
            for start, stop in waiting.batches():
                wanted = [i for i in range(start, stop) if only is None or i in only]
                if wanted:
                    batch = eng.run_batch(cp.load(result.run_id), waiting.activation_id, wanted, workflow=doc)
                    kept.update((o.index, o) for o in batch.outcomes)
            result = eng.join_foreach(cp.load(result.run_id), {waiting.activation_id: list(kept.values())},
                                      workflow=doc)
            trace.extend(result.trace)
        return result

    first = drive(eng.run(doc, {"xs": XS}))
    assert first.status == "completed"
    assert first.output == {"out": [0, None, 20, 30, 40, None, 60, 70, 80, None],
                            "summary": {"sum": 300, "missing": 3}}
    failed = sorted(i for i, o in kept.items() if o.failed)
    assert failed == [1, 5, 9]
    joined = next(e for e in first.trace if e.kind == "foreach_completed")
    checkpoint = cp.load_at(first.run_id, joined.step - 1)  # the last one before the join: waiting for batches
    for index in failed:
        del kept[index]  # the host forgets the failed outcomes it will run again

    reopened = eng.redrive_foreach(checkpoint, cp.load(first.run_id), activation_id=joined.activation_id or "",
                                   indices=failed, workflow=doc)
    assert reopened.status == "waiting" and reopened.run_state.attempt == 2
    marker = reopened.trace[0]
    assert marker.kind == "run_redriven" and marker.seq == trace[-1].seq + 1
    assert marker.step == first.run_state.step + 1
    assert marker.summary | {} == {"attempt": 2, "frames": [], "foreach": "xs", "activation_id": joined.activation_id,
                                   "items": [1, 5, 9], "count": 3, "from_step": checkpoint.step}
    done = drive(reopened, only=failed)
    assert done.status == "completed", done.error
    clean = Engine(registry=flaky_registry(Counter(), set()), options=EngineOptions(ids=SequentialIds(),
                                                                                    distribute=lambda node, n: True))
    assert done.output == run_distributed(clean, doc, {"xs": XS}).output == {
        "out": [x * 10 for x in XS], "summary": {"sum": 450, "missing": 0}}
    # Exactly the failed items ran again; the completed ones kept their results.
    assert calls == Counter({x: 2 if x in (1, 5, 9) else 1 for x in XS})
    # One trace across both attempts; the downstream node ran in each, the second time with the new results.
    assert [e.seq for e in trace] == list(range(len(trace)))
    assert [e.summary for e in trace if e.kind == "node_completed" and e.node_id == "total"] == [
        {"sum": 300, "missing": 3}, {"sum": 450, "missing": 0}]


def test_a_foreach_redrive_is_refused_when_the_checkpoints_do_not_fit() -> None:
    doc = tolerant_then_total()
    cp = InMemoryCheckpointer(history=HistoryPolicy())
    eng = Engine(registry=flaky_registry(Counter(), {1}), options=EngineOptions(ids=SequentialIds(), checkpointer=cp,
                                                                                distribute=lambda node, n: True))
    waiting = eng.run(doc, {"xs": XS})
    [activation] = distributed_foreach(waiting.run_state)
    with pytest.raises(RedriveError, match="only a completed run"):
        eng.redrive_foreach(waiting.run_state, waiting.run_state, activation_id=activation.activation_id,
                            indices=[1], workflow=doc)
    done = run_distributed(eng, doc, {"xs": XS})
    for before, indices, message in ((waiting.run_state, [10], "distinct indices in 0..9"),
                                     (waiting.run_state, [], "distinct indices"),
                                     (done.run_state, [1], "does not wait for the batches")):
        with pytest.raises(RedriveError, match=message):
            eng.redrive_foreach(before, done.run_state.model_copy(update={"run_id": before.run_id}),
                                activation_id=activation.activation_id, indices=indices, workflow=doc)


@pytest.mark.parametrize("shape", ["nested", "subgraph"])
def test_each_item_carries_the_trace_events_one_run_makes_for_it(shape: str) -> None:
    """Loops inside the item and subgraph calls around the foreach included: the run's events plus its items'
    are what one run makes (apart from the distribution's own), and each item's events are in its frames."""
    doc, workflows = (nested(), {}) if shape == "nested" else (calling_parent(), {"orders-child": orders_child()})
    local = Engine(registry(), EngineOptions(
        ids=SequentialIds(), workflows=workflows)).run(doc, {"customers": CUSTOMERS})
    trace: list[TraceEvent] = []
    batches: list[Any] = []
    spread_engine = Engine(registry=registry(), options=EngineOptions(ids=SequentialIds(), workflows=workflows,
                                                                      distribute=lambda node, n: True))
    with_items = run_distributed(spread_engine, doc, {"customers": CUSTOMERS}, batches=batches, trace=trace)
    assert with_items.status == "completed", with_items.error

    def kinds(events: Any) -> Counter[tuple[Any, ...]]:
        return Counter((e.kind, e.node_id, e.index, e.attempt, e.label) for e in events
                       if e.kind not in ("foreach_distributed", "run_waiting"))

    assert kinds(trace) == kinds(local.trace)
    # Every item of a distributed activation: its own item events once, with the item's index; deeper events
    # (the inner loop's) in frames below it.
    items = [e for e in trace if e.node_id == "orders" and e.kind in ("item_started", "item_completed")]
    assert len(items) == 2 * sum(stop - start for _, start, stop in batches)
    starts = Counter((e.activation_id, e.index) for e in items if e.kind == "item_started")
    assert set(starts.values()) == {1}
