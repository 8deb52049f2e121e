"""Control regions: which foreach bodies every reachable node runs inside.

One traversal over ``(node, owner stack)`` states from ``start``: a ``loop``
route pushes the foreach onto the stack, a ``done`` route continues with the
foreach's own stack, and a route back to the innermost owner is the back-edge
(it ends the item, so it is not followed). Plain cycles inside one region
revisit a known state and stop. Because states, not nodes, are visited, a
node reached under two stacks is seen with both, which is what the region
diagnostics need; a cap on stacks per node keeps broken documents linear.

A node's *canonical* stack is the common prefix of every stack it was seen
with: for a well-formed document that is its only stack, and for a broken one
it is the set of foreach entries that are active however the node is reached,
which keeps later path checks sound.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from runtime._analysis._labels import LabelSet
from runtime._diagnostics import Diagnostic
from runtime._document import ForeachNode, Workflow

Stack = tuple[str, ...]
AnyNode = object

#: More stacks than this for one node only happen in broken documents; stop collecting.
_MAX_STACKS_PER_NODE = 8


@dataclass(frozen=True, slots=True)
class Regions:
    stacks: Mapping[str, Stack]          # canonical stack of every reachable node
    seen: Mapping[str, tuple[Stack, ...]]  # every stack a node was reached with
    diagnostics: tuple[Diagnostic, ...]
    routes: Mapping[str, Mapping[str, str]]  # source -> label -> target (first route per label)


def _show(stack: Stack) -> str:
    return "[" + ", ".join(stack) + "]" if stack else "[] (top level)"


def _next_stack(node: AnyNode, label: str, stack: Stack) -> Stack:
    if isinstance(node, ForeachNode) and label == "loop":
        return (*stack, node.id)
    return stack


def _common_prefix(stacks: tuple[Stack, ...]) -> Stack:
    first = stacks[0]
    length = len(first)
    for other in stacks[1:]:
        length = min(length, len(other))
        for i in range(length):
            if other[i] != first[i]:
                length = i
                break
    return first[:length]


def _is_prefix(short: Stack, long: Stack) -> bool:
    return len(short) < len(long) and long[: len(short)] == short


def compute_regions(
    workflow: Workflow,
    nodes: Mapping[str, AnyNode],
    routes: Mapping[str, Mapping[str, str]],
    labels: Mapping[str, LabelSet],
) -> Regions:
    start = workflow.start_node
    first: dict[str, Stack] = {}  # node -> first stack it was reached with (the only one, when well-formed)
    more: dict[str, list[Stack]] = {}  # only for nodes reached with several stacks
    if start is not None and start in nodes:
        queue: deque[tuple[str, Stack]] = deque([(start, ())])
        while queue:
            node_id, stack = queue.popleft()
            known = first.get(node_id)
            if known is None:
                first[node_id] = stack
            elif known == stack:
                continue
            else:
                extra = more.get(node_id)
                if extra is None:
                    extra = more[node_id] = [known]
                if stack in extra or len(extra) >= _MAX_STACKS_PER_NODE:
                    continue
                extra.append(stack)
            node = nodes[node_id]
            for label, target in routes.get(node_id, {}).items():
                if target not in nodes:
                    continue
                after = _next_stack(node, label, stack)
                if target in after and isinstance(nodes[target], ForeachNode):
                    continue  # a back-edge (legal or not): the item ends here
                queue.append((target, after))
    # One shared 1-tuple per distinct stack, not one per node: a large document has few distinct stacks.
    singles: dict[Stack, tuple[Stack, ...]] = {}
    frozen_seen: dict[str, tuple[Stack, ...]] = {}
    canonical: dict[str, Stack] = {}
    for node_id, stack in first.items():
        extra = more.get(node_id)
        if extra is None:
            one = singles.get(stack)
            if one is None:
                one = singles[stack] = (stack,)
            frozen_seen[node_id] = one
            canonical[node_id] = stack
        else:
            frozen_seen[node_id] = tuple(extra)
            canonical[node_id] = _common_prefix(frozen_seen[node_id])
    checker = _RegionChecker(nodes, routes, labels, frozen_seen, canonical)
    return Regions(canonical, frozen_seen, tuple(checker.run()), routes)


@dataclass(slots=True)
class _RegionChecker:
    nodes: Mapping[str, AnyNode]
    routes: Mapping[str, Mapping[str, str]]
    labels: Mapping[str, LabelSet]
    seen: Mapping[str, tuple[Stack, ...]]
    canonical: Mapping[str, Stack]
    out: list[Diagnostic] = field(default_factory=list)

    def clean(self, node_id: str) -> bool:
        return len(self.seen[node_id]) == 1

    def run(self) -> list[Diagnostic]:
        conflicts: dict[str, list[tuple[str, str, Stack]]] = {}
        for node_id, stack in self.canonical.items():
            node = self.nodes[node_id]
            for label, target in self.routes.get(node_id, {}).items():
                if target not in self.nodes:
                    continue
                after = _next_stack(node, label, stack)
                if target in after and isinstance(self.nodes[target], ForeachNode):
                    if after[-1] != target:
                        self.outer_back_edge(node_id, label, target, after)
                    continue
                if self.clean(node_id) and not self.clean(target):
                    conflicts.setdefault(target, []).append((node_id, label, after))
            if stack:
                self.no_return(node_id, stack)
        for target, edges in conflicts.items():
            self.conflict(target, edges)
        return self.out

    def outer_back_edge(self, node_id: str, label: str, target: str, after: Stack) -> None:
        inner = after[-1]
        self.out.append(Diagnostic(
            "region.escape", "error", node_id, f"routes.{label}",
            f"route {node_id!r} --{label}--> {target!r} jumps from inside the body of foreach {inner!r} back to "
            f"the outer foreach {target!r}; a body returns only to its innermost foreach",
            f"route it back to {inner!r} instead, and continue towards {target!r} from the done route of {inner!r}",
        ))

    def conflict(self, target: str, edges: list[tuple[str, str, Stack]]) -> None:
        stacks = sorted(self.seen[target], key=len)
        chain = all(_is_prefix(stacks[i], stacks[i + 1]) for i in range(len(stacks) - 1))
        if chain:
            outside = stacks[0]
            # a loop route enters a body, it never leaves one
            escaping = [edge for edge in edges if len(edge[2]) > len(outside)
                        and not (edge[1] == "loop" and isinstance(self.nodes[edge[0]], ForeachNode))]
            owner = stacks[1][len(outside)]
            if escaping and not self.reaches(target, owner):
                for source, label, after in escaping:
                    left = after[len(outside):]
                    where = "the foreach bodies " + ", ".join(repr(f) for f in left) if len(left) > 1 else \
                        f"the body of foreach {left[0]!r}"
                    self.out.append(Diagnostic(
                        "region.escape", "error", source, f"routes.{label}",
                        f"route {source!r} --{label}--> {target!r} leaves {where}: {target!r} runs outside it "
                        f"(owner stack {_show(outside)})",
                        f"end the body with a route back to foreach {left[-1]!r} (its back-edge); work after the "
                        f"loop belongs on the done route of {left[0]!r}",
                    ))
                return
        shown = ", ".join(_show(s) for s in stacks)
        self.out.append(Diagnostic(
            "region.ambiguous", "error", target, None,
            f"node {target!r} is reached under different foreach owner stacks: {shown}; a node must belong to "
            f"exactly one foreach body",
            "use a separate node for each body, or enter the body only through its foreach's loop route",
        ))

    def reaches(self, start: str, goal: str) -> bool:
        """Whether ``goal`` can be reached from ``start`` along routes (ignoring regions)."""
        todo = [start]
        visited = {start}
        while todo:
            node_id = todo.pop()
            for target in self.routes.get(node_id, {}).values():
                if target == goal:
                    return True
                if target in self.nodes and target not in visited:
                    visited.add(target)
                    todo.append(target)
        return False

    def no_return(self, node_id: str, stack: Stack) -> None:
        owner = stack[-1]
        routed = self.routes.get(node_id, {})
        label_set = self.labels[node_id]
        hint = f"add a route that leads back to foreach {owner!r} (directly or through other body nodes)"
        if not label_set.known:
            if not routed:
                self.out.append(Diagnostic(
                    "region.no_return", "error", node_id, "routes",
                    f"node {node_id!r} is inside the body of foreach {owner!r} but has no routes, so the item's "
                    f"lineage ends there without returning to {owner!r}", hint,
                ))
            return
        for label in label_set.required:
            if label not in routed:
                self.out.append(Diagnostic(
                    "region.no_return", "error", node_id, f"routes.{label}",
                    f"node {node_id!r} is inside the body of foreach {owner!r} and can emit {label!r}, which has "
                    f"no route: the item's lineage would end there without returning to {owner!r}",
                    f"add a route for {label!r} that leads back to foreach {owner!r}",
                ))
