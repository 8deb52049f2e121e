"""``state.concurrent_write``: a state field overwritten by loop items that run at the same time.

A workflow's state is one per scope, shared by every item frame of its
foreach nodes. When a foreach runs items concurrently (``max_concurrency`` >
1), a ``set`` write inside its body, or an inner foreach's ``results`` list
(written once per outer item, when that inner loop is done), is replaced by
every outer item in turn: the item that finishes last wins, and a node of
another item that reads the field in between sees a neighbour's value. This
is the trap the first-run tour fell into (the 4th customer's lines in
``state.lines``), so it is a warning that says how to collect instead.
``append``/``extend`` writes keep every item's value and are not reported; a
subgraph call has its own scope, so writes inside the child are not shared.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from runtime._analysis._regions import Stack
from runtime._diagnostics import Diagnostic
from runtime._document import ForeachNode, Workflow
from runtime._paths import GraphSourcePath, format_key


@dataclass(frozen=True, slots=True)
class ConcurrentWrite:
    """One state field that several items of ``concurrent`` write: ``writer`` writes it in ``field``
    (``output.<target>`` as other output diagnostics, or ``results``); ``inner`` is the innermost loop
    around the write when that is another loop."""

    writer: str
    field: str
    target: str
    concurrent: str
    inner: str | None


def concurrent_writes(workflow: Workflow, nodes: Mapping[str, object], stacks: Mapping[str, Stack]
                      ) -> Iterator[ConcurrentWrite]:
    for node in workflow.nodes:
        if nodes.get(node.id) is not node or node.id not in stacks:
            continue
        loops = stacks[node.id]
        # the outermost concurrent loop: every write under it is replaced by each of its items
        concurrent = next((loop for loop in loops if _runs_concurrently(nodes.get(loop))), None)
        if concurrent is None:
            continue
        inner = loops[-1] if loops[-1] != concurrent else None
        if isinstance(node, ForeachNode):
            if node.results is not None:
                yield ConcurrentWrite(node.id, "results", _state(node.results.parts), concurrent, node.id)
            continue
        for binding in getattr(node, "output", ()) or ():
            if binding.mode == "set":
                parts = binding.target.parts
                yield ConcurrentWrite(node.id, f"output.{format_key(parts)}", _state(parts), concurrent, inner)


def _state(parts: tuple[str, ...]) -> str:
    return str(GraphSourcePath("state", parts))


def _runs_concurrently(node: object) -> bool:
    return isinstance(node, ForeachNode) and node.max_concurrency > 1


def concurrent_write_diagnostics(nodes: Mapping[str, object], writes: Iterable[ConcurrentWrite]) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    for write in writes:
        outer = nodes[write.concurrent]
        assert isinstance(outer, ForeachNode)
        loops = (f"loop {_title(nodes, write.inner)!r} inside loop {outer.title!r}" if write.inner
                 else f"loop {outer.title!r}")
        what = ("the results list of " + loops if write.writer == write.inner
                else f"node {_title(nodes, write.writer)!r} in {loops}")
        found.append(Diagnostic(
            "state.concurrent_write", "warning", write.writer, write.field,
            f"{what} sets {write.target} once for every item of loop {outer.title!r}, which runs "
            f"{outer.max_concurrency} items at once: each item overwrites it and the last to finish wins",
            f"collect every item's value instead: route the value back to loop {outer.title!r} and give it a "
            f"results list (one entry per item, in item order), or write with mode append; a value only this item's "
            f"later nodes read can go through a subgraph call (each call has its own state); or set "
            f"max_concurrency of {outer.title!r} to 1",
            {"target": write.target, "concurrent_foreach": write.concurrent,
             **({"inner_foreach": write.inner} if write.inner else {})}))
    return found


def _title(nodes: Mapping[str, object], node_id: str | None) -> str:
    node = nodes.get(node_id or "")
    return str(getattr(node, "title", node_id))


def last_item_wins(nodes: Mapping[str, object], writes: Iterable[ConcurrentWrite]) -> dict[str, str]:
    """State path -> title of the concurrent loop whose items overwrite it (what the path picker marks)."""
    return {write.target: _title(nodes, write.concurrent) for write in writes}
