"""Distributed foreach: a foreach activation's items run as batches elsewhere, then are joined back.

A host that runs work on many processes (the designer's task workers) gives
the engine a ``distribute(node, number_of_items)`` policy. When a foreach
whose node sets ``batch_size`` starts (in the root scope or inside a
subgraph call, at any depth) and the policy says yes, the
activation is *distributed*: it snapshots its items as usual but starts no
item frame. Once nothing else can run, the run ends a call with status
``waiting``; ``distributed_foreach(run_state)`` says which activations wait
and how they split into batches.

Each batch is a pure computation: ``Engine.run_batch(run_state, activation_id,
indices)`` runs those items of the activation from the run's checkpoint in a
state of its own that holds the activation's waiting frame and its ancestry
up to the run's root frame, through the calls of enclosing subgraphs (so
``ctx.foreach`` and the aliases are exactly what the items see in one run,
outer loops included), and every scope on the way with its input and state
as they were. Item
frames are children of the waiting frame, as in one run; nested loops in the
body run inside the batch. Every item that ends (returned to the foreach, or
failed: inside a batch every item failure is kept as that item's outcome) is
handed to ``on_items`` after the superstep it ended in, which is where a host
commits it; a host that restarts a batch passes only the indices it has not
committed, so no committed item runs twice.

Each outcome carries the trace events of its item (``ItemOutcome.events``: the
item frame's and those of every frame below it, nested loops and subgraph
calls included, with the item's frame, activation and index as in one run),
so a host stores them with the item it commits and never for an item it will
run again. Their ``seq`` and ``step`` are the batch's own: a host numbers them
in its run's trace when it commits them. Events of items that have not ended
when a batch ends ``waiting`` are in ``BatchResult.held``; pass them back to
``Engine.continue_batch``.

``Engine.join_foreach(run_state, {activation_id: outcomes})`` meets the
activation's barrier with every item's ``ItemOutcome``: results in index
order into the foreach's ``results`` list, failures counted against the
node's tolerance (beyond it the foreach fails with ``foreach.items_failed``
naming the failed indices), and the run continues on ``done``.

What differs from one run: a batch reads the scope's state as it was when
the foreach started, and its own state writes stay in the batch (the
analyzer warns, ``foreach.batch_state_write``); a batch cannot pause at an
interrupt (``foreach.batch_interrupt``; an item that does anyway fails).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from runtime._errors import CorruptRunStateError, WorkflowError
from runtime._state import ROOT_SCOPE_ID, Barrier, RunState
from runtime._trace import TraceEvent


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """How one item of a distributed foreach ended: its ``result``, or ``error`` (the error record of the node
    that failed, as an ``error`` route would receive it)."""

    index: int
    result: Any = None
    error: dict[str, Any] | None = None
    #: The item's trace events, in the order they happened (see the module's docstring); not compared.
    events: tuple[TraceEvent, ...] = field(default=(), compare=False, repr=False)

    @property
    def failed(self) -> bool:
        return self.error is not None


@dataclass(frozen=True, slots=True)
class DistributedForeach:
    """A distributed foreach activation waiting for its batches."""

    activation_id: str
    node_id: str
    total: int
    batch_size: int
    in_flight: int

    def batches(self) -> list[tuple[int, int]]:
        """``[start, stop)`` of each batch, in index order."""
        return [(start, min(start + self.batch_size, self.total)) for start in range(0, self.total, self.batch_size)]


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What ``Engine.run_batch`` ended with: ``completed`` (every item has an outcome), ``cancelled`` (the host
    said stop), ``failed`` (the batch itself could not go on, ``error``) or ``waiting`` (from an engine with
    ``sleep_in_process=False``: every item still running is suspended in a retry's backoff or a ``wait`` step
    until ``wake_at``; ``state`` is the batch's own state, to store and hand to ``Engine.continue_batch`` at or
    after ``wake_at``, so no worker sleeps through it); ``outcomes`` of this call. ``held``: ``(index, event)`` of
the items that have not ended yet, for ``Engine.continue_batch`` (only when ``waiting``)."""

    status: Literal["completed", "cancelled", "failed", "waiting"]
    outcomes: tuple[ItemOutcome, ...]
    error: WorkflowError | None = None
    state: RunState | None = None
    wake_at: float | None = None
    held: tuple[tuple[int, TraceEvent], ...] = ()


class ItemTraces:
    """A batch's trace sink: keeps each event under the item of ``activation_id`` it belongs to, until the item
    ends (``take``). An event belongs to the item whose frame is its own frame or an ancestor of it (through
    nested item frames and subgraph callers); events outside every item (the batch's own run events) are
    dropped, as they mean nothing in the run's trace. Frames are looked up as the event is made, while they
    exist; what was found is remembered per frame."""

    __slots__ = ("activation_id", "state", "owners", "held")

    def __init__(self, activation_id: str, held: Iterable[tuple[int, TraceEvent]] = ()) -> None:
        self.activation_id = activation_id
        self.state: RunState | None = None
        self.owners: dict[str, int | None] = {}  # frame id -> its item's index (None: outside every item)
        self.held: dict[int, list[TraceEvent]] = {}
        for index, event in held:
            self.held.setdefault(index, []).append(event)

    def __call__(self, event: TraceEvent) -> None:
        if event.activation_id == self.activation_id and event.index is not None:
            index: int | None = event.index
            if event.frame_id is not None:
                self.owners[event.frame_id] = event.index
        else:
            index = self._owner(event.frame_id)
        if index is not None:
            self.held.setdefault(index, []).append(event)

    def _owner(self, frame_id: str | None) -> int | None:
        path: list[str] = []
        found: int | None = None
        frames = self.state.frames if self.state is not None else {}
        while frame_id is not None:
            if frame_id in self.owners:
                found = self.owners[frame_id]
                break
            path.append(frame_id)
            frame = frames.get(frame_id)
            if frame is None:
                break
            meta = frame.metadata.get("foreach")
            if isinstance(meta, dict) and meta.get("activation_id") == self.activation_id:
                found = meta.get("index")
                break
            frame_id = frame.parent_frame_id
        for seen in path:
            self.owners[seen] = found
        return found

    def take(self, index: int) -> tuple[TraceEvent, ...]:
        return tuple(self.held.pop(index, ()))

    def left(self) -> tuple[tuple[int, TraceEvent], ...]:
        return tuple((index, event) for index, events in sorted(self.held.items()) for event in events)


def distributed_foreach(run_state: RunState) -> list[DistributedForeach]:
    """The distributed activations of a run that wait for batches, in the order they started."""
    found = []
    for activation in run_state.activations.values():
        if activation.distributed:
            found.append(DistributedForeach(activation.activation_id, activation.node_id, len(activation.items),
                                            activation.batch_size or 1, activation.batches_in_flight or 1))
    return found


def batch_state(run_state: RunState, activation_id: str, indices: Sequence[int], max_concurrency: int
                ) -> RunState:
    """The state one batch runs in: the activation's waiting frame and its ancestry up to the run's root frame
    (through the caller frames of enclosing subgraph scopes) with their activations, every scope on that path,
    and the activation itself admitting only ``indices``. Shares the JSON values of ``run_state`` (the engine
    never mutates those in place) but none of its models."""
    activation = run_state.activations.get(activation_id)
    if activation is None or not activation.distributed:
        raise CorruptRunStateError(f"run {run_state.run_id!r} has no distributed foreach activation "
                                   f"{activation_id!r}", activation_id=activation_id)
    total = len(activation.items)
    ordered = sorted(set(indices))
    if ordered and not (0 <= ordered[0] and ordered[-1] < total):
        raise CorruptRunStateError(f"batch indices must lie in 0..{total - 1} for activation {activation_id!r}",
                                   activation_id=activation_id)
    if activation.scope_id not in run_state.scopes:
        raise CorruptRunStateError(f"distributed activation {activation_id!r} is in scope {activation.scope_id!r}, "
                                   f"which does not exist", activation_id=activation_id)
    batch = RunState(run_id=run_state.run_id, workflow=run_state.workflow, status="running",
                     id_seq=run_state.id_seq)
    frame_id: str | None = activation.frame_id
    while frame_id is not None:
        frame = run_state.frames.get(frame_id)
        if frame is None:
            raise CorruptRunStateError(f"frame {frame_id!r} of activation {activation_id!r}'s ancestry is missing",
                                       frame_id=frame_id)
        if frame.scope_id not in batch.scopes:
            scope = run_state.scopes.get(frame.scope_id)
            if scope is None:
                raise CorruptRunStateError(f"frame {frame_id!r} of activation {activation_id!r}'s ancestry is in "
                                           f"scope {frame.scope_id!r}, which does not exist", frame_id=frame_id)
            batch.scopes[frame.scope_id] = scope.model_copy()
        batch.frames[frame_id] = frame.model_copy()
        lineage = run_state.lineages.get(frame.lineage_id)
        if lineage is not None:
            batch.lineages[lineage.lineage_id] = lineage.model_copy()
        outer = frame.metadata.get("foreach")
        if isinstance(outer, dict) and outer.get("activation_id") in run_state.activations:
            outer_id = outer["activation_id"]
            batch.activations[outer_id] = run_state.activations[outer_id].model_copy(
                update={"running": list(run_state.activations[outer_id].running)})
            if outer_id in run_state.barriers:
                batch.barriers[outer_id] = run_state.barriers[outer_id].model_copy()
        frame_id = frame.parent_frame_id
    if ROOT_SCOPE_ID not in batch.scopes:
        raise CorruptRunStateError(f"activation {activation_id!r}'s ancestry does not reach the run's root scope",
                                   activation_id=activation_id)
    batch.activations[activation_id] = activation.model_copy(update={
        "batch_size": None, "batches_in_flight": None, "only": ordered, "next_index": 0, "running": [],
        "completed": 0, "failed": [], "results_id": None, "results": [], "max_concurrency": max_concurrency,
    })
    batch.barriers[activation_id] = Barrier(activation_id=activation_id, frame_id=activation.frame_id,
                                            expected=len(ordered))
    return batch
