"""Graph algorithms shared by the analyzer and the schema checks."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping


def strongly_connected[T: Hashable](vertices: Iterable[T], edges: Mapping[T, Iterable[T]]) -> Iterator[list[T]]:
    """Tarjan's components, iteratively (documents and schemas may hold thousands of vertices in one chain),
    each yielded after every component it reaches."""
    index: dict[T, int] = {}
    low: dict[T, int] = {}
    stack: list[T] = []
    on_stack: set[T] = set()
    for start in vertices:
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work: list[tuple[T, Iterator[T]]] = [(start, iter(edges.get(start, ())))]
        while work:
            vertex, successors = work[-1]
            step = next(successors, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(edges.get(step, ()))))
                elif step in on_stack:
                    low[vertex] = min(low[vertex], index[step])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[vertex])
            if low[vertex] == index[vertex]:
                component: list[T] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == vertex:
                        break
                yield component
