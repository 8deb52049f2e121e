"""``CompileCache``: validated, compiled documents that several engines share.

An engine validates a document and compiles it once and keeps the plan by the document's identity (documents are
frozen: a changed document is a new object). A host that makes an engine per run (the designer's worker does, for
each run's own checkpointer, secrets and budget) lost that: every run of the same document was validated and
compiled again (issue 33: ~1.7 ms of a one-step run). Handing each engine one ``CompileCache``
(``EngineOptions.compiled``) and the same document object for the same document keeps one plan.

The host vouches that the engines sharing a cache validate alike: the same task registry, the same answers from
their subgraph resolvers for what the documents call, the same ``max_retry_delay``.
"""

from __future__ import annotations

import threading

from runtime._compiled import CompiledWorkflow
from runtime._document import Workflow

#: Plans a cache keeps unless told otherwise; the oldest goes first.
DEFAULT_LIMIT = 256


class CompileCache:
    """Compiled plans by document identity, at most ``limit`` of them (the oldest stored goes first); safe to
    share between threads."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"CompileCache's limit is a positive whole number, not {limit!r}")
        self.limit = limit
        # id -> (the document, its plan): the entry holds the document, so its id cannot be reused meanwhile.
        self._plans: dict[int, tuple[Workflow, CompiledWorkflow]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._plans)

    def get(self, workflow: Workflow) -> CompiledWorkflow | None:
        """The plan compiled for this very document object, or None."""
        hit = self._plans.get(id(workflow))
        return hit[1] if hit is not None and hit[0] is workflow else None

    def put(self, workflow: Workflow, plan: CompiledWorkflow) -> None:
        with self._lock:
            self._plans.pop(id(workflow), None)
            while len(self._plans) >= self.limit:
                self._plans.pop(next(iter(self._plans)))
            self._plans[id(workflow)] = (workflow, plan)

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()
