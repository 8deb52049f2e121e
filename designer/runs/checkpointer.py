"""``OrmCheckpointer``: the runtime's Checkpointer protocol on the Django ORM.

One ``save`` is one transaction: the RunState goes into ``Run.run_state`` and
the superstep's new trace events into ``RunEvent`` together, so after a crash
the database holds either both or neither. When the checkpointer belongs to a
worker (``owner``), the same transaction renews that worker's lease and
writes only if the worker still holds it; a worker that lost its lease gets
``LeaseLost`` and has committed nothing.

The runtime says which parts of a RunState never change once written
(``RunState.checkpoint_delta``: a foreach's item snapshot, a scope's input,
the full chunks of growing lists such as collected foreach results and state
lists written by ``append``) and under which keys; each is stored once in
``RunStatePart`` under that key and left out of ``Run.run_state``, and a save
writes only the parts that are new since this checkpointer's last save. So a
save costs what the live structure costs and what changed, not what the
collections hold. Read a complete state with ``run_state_of(run)`` (or
``load``), never from the column.

Checkpoint history (forking a run from a past superstep): each save also
writes a ``RunCheckpoint`` row (the state data without its parts, which
stay shared in ``RunStatePart``), kept as ``TRELLIS_CHECKPOINT_HISTORY``
says (``runtime.HistoryPolicy.parse``: ``all`` by default). A part is
dropped only when neither the latest state nor a kept checkpoint needs it.

A checkpointer serves one team: rows are found by ``(team, Run.runtime_id)``.
The designer mints runtime ids as ``run_<pk, 13 digits>`` (``Run.runtime_id_for``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pydantic_core
from django.db import connection, connections, transaction
from psycopg.pq import TransactionStatus

from designer.conf import trellis
from designer.core.prepared import prepared_cursor
from designer.models import Run, RunCheckpoint, RunEvent, RunStatePart, Team
from designer.runs.lease import DATABASE_EXPIRY_SQL, LeaseLost, expiry_in, lease_seconds
from runtime import RunState, WorkflowError
from runtime.checkpoint import CheckpointDelta, CheckpointInfo, HistoryPolicy, PartLedger
from runtime.errors import CheckpointNotFoundError, CorruptRunStateError
from runtime.inspect import run_summary
from runtime.state import TraceEvent, parse_run_state

_SETTING = object()
#: A run's statuses after which its engine saves nothing more: the save that reaches one can be held open
#: (``OrmCheckpointer(hold_final=True)``) to commit with the run's outcome.
FINAL = frozenset({"completed", "failed", "cancelled"})


def history_policy() -> HistoryPolicy | None:
    """``TRELLIS_CHECKPOINT_HISTORY`` as a policy (None: keep no past checkpoints)."""
    return trellis.CHECKPOINT_HISTORY


def checkpoint_state_of(row: RunCheckpoint) -> dict[str, Any]:
    """A kept checkpoint as complete RunState JSON (its parts put back); not checked further."""
    if not isinstance(row.state, dict):
        raise CorruptRunStateError(f"run {row.run_id}: the checkpoint after superstep {row.step} is not a JSON "
                                   "object", step=row.step)
    return _joined(row.run_id, row.state)


class UnknownRunError(WorkflowError):
    """A checkpoint for a runtime run id that has no ``Run`` row in the checkpointer's team."""

    code = "run.unknown"


class HookWroteElsewhereError(WorkflowError):
    """The ``extra_fields`` hook sent a write through another database connection than the save's: those rows
    would not commit with the save (nor roll back with it), and the save, which judges from its own connection
    whether the hook wrote anything, could have written without a transaction of its own."""

    code = "checkpoint.hook_elsewhere"


def _refuse_writes(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    """An ``execute_wrapper`` for the other databases' connections while the hook runs: reads pass."""
    if sql.lstrip()[:6].upper() != "SELECT":
        alias = context["connection"].alias
        raise HookWroteElsewhereError(
            f"the checkpoint's extra_fields hook wrote through database {alias!r}; write through the save's "
            f"connection ({connection.alias!r}) so that what it writes commits with the save",
            alias=alias, statement=sql[:80])
    return execute(sql, params, many, context)


def _event_data(event: TraceEvent) -> dict[str, Any]:
    """What of an event has no column of its own: ``TraceEvent.to_record()``'s ``data``, plus the exact ``time``
    and ``duration`` (the columns round them)."""
    data: dict[str, Any] = {"step": event.step}
    for name, value in (("label", event.label), ("attempt", event.attempt), ("summary", event.summary)):
        if value is not None:
            data[name] = value
    data["time"] = event.time
    if event.duration is not None:
        data["duration"] = event.duration
    return data


def event_row(run_pk: int, event: TraceEvent, seq: int | None = None) -> RunEvent:
    """A ``RunEvent`` for one trace event: identities as columns, the rest (``TraceEvent.to_record()["data"]``)
    in ``data``, plus the exact ``time`` and ``duration`` so ``load_events`` returns the event unchanged.
    ``seq``: the number it is stored under (``append_events``), when not the event's own."""
    return RunEvent(
        run_id=run_pk,
        seq=event.seq if seq is None else seq,
        kind=event.kind,
        node_id=event.node_id or "",
        frame_id=event.frame_id or "",
        scope_id=event.scope_id or "",
        lineage_id=event.lineage_id or "",
        activation_id=event.activation_id or "",
        index=event.index,
        data=_event_data(event),
        at=datetime.fromtimestamp(event.time, tz=UTC),
        duration_ms=None if event.duration is None else max(0, round(event.duration * 1000)),
    )


def last_stored_seq(run_pk: int) -> int | None:
    """The highest ``seq`` stored for the run (one step down the ``(run, seq)`` index), or None."""
    return RunEvent.objects.filter(run_id=run_pk).order_by("-seq").values_list("seq", flat=True).first()


def append_events(run_pk: int, events: Sequence[TraceEvent], *, first: int = 0, next_seq: int | None = None) -> int:
    """Store ``events`` as the run's next trace events, numbered on from the last stored one (or from ``first``
    when that is higher: a run's own events keep their engine numbers while nothing else wrote to its trace);
    returns the number after the last one stored.

    Every writer of a run's trace calls this in a transaction that has already updated the run's row: the run's
    own checkpoints (``OrmCheckpointer.save``) and the commits of its distributed foreach batches
    (``batches.Committer``), on any worker. That row lock makes them take turns, each reading the last number
    after the one before has committed, so the numbers have no gaps, follow commit order and never collide,
    however the run's own supersteps and its batches interleave. ``next_seq``: the number after the last stored,
    when the caller knows nobody else can have written since (it saves the read)."""
    if not events:
        return first if next_seq is None else max(first, next_seq)
    if next_seq is None:
        last = last_stored_seq(run_pk)
        next_seq = 0 if last is None else last + 1
    start = max(first, next_seq)
    _insert_events(run_pk, events, start)
    return start + len(events)


_EVENT_COLUMNS = ("run_id", "seq", "kind", "node_id", "frame_id", "scope_id", "lineage_id", "activation_id", "index",
                  "data", "at", "duration_ms")


def _insert_events(run_pk: int, events: Sequence[TraceEvent], start: int) -> None:
    """The rows ``event_row`` makes, written without ``bulk_create``: a collected foreach stores four events an item,
    and building a model instance per event and compiling its insert was half of a worker's time per item. The
    values read back as the ones ``bulk_create`` would store (``data`` as ``_json_text`` writes it).

    On PostgreSQL one ``COPY`` of text made here (``_copy_rows``): a multi-row INSERT made the client rewrite a
    statement of hundreds of placeholders at every save, ``executemany`` costs the server a statement per row, and
    ``Copy.write_row`` formatted each row in Python. Elsewhere (SQLite) one ``executemany``, a loop in C over one
    compiled statement."""
    quote = connection.ops.quote_name
    table_columns = f"{quote(RunEvent._meta.db_table)} ({', '.join(quote(name) for name in _EVENT_COLUMNS)})"
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {table_columns} FROM STDIN") as copy:
            copy.write(_copy_rows(run_pk, events, start))
        return
    # ``at`` as the field sends it: the text of the naive time in the connection's zone, as
    # ``adapt_datetimefield_value`` makes it (here in one step, not five calls).
    zone = connection.timezone
    rows = []
    for number, event in enumerate(events):
        duration = event.duration
        rows.append((run_pk, start + number, event.kind, event.node_id or "", event.frame_id or "",
                     event.scope_id or "", event.lineage_id or "", event.activation_id or "", event.index,
                     _json_text(_event_data(event)),
                     str(datetime.fromtimestamp(event.time, tz=zone).replace(tzinfo=None)),
                     None if duration is None else max(0, round(duration * 1000))))
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {table_columns} VALUES ({', '.join(['%s'] * len(_EVENT_COLUMNS))})", rows)


def _copy_text(value: str | None) -> str:
    """A text column's value in ``COPY``'s text format: backslash, tab, newline and carriage return escaped."""
    if value is None or value == "":
        return ""
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return value


def _copy_rows(run_pk: int, events: Sequence[TraceEvent], start: int) -> str:
    """``events`` as the rows of a ``COPY ... FROM STDIN`` in text format, ``_EVENT_COLUMNS`` in order: ``\\N`` for
    NULL, the time in ISO 8601 with its zone. JSON text holds no tab or line break (it escapes them), so only its
    backslashes need escaping."""
    lines = []
    for number, event in enumerate(events):
        index, duration = event.index, event.duration
        lines.append("\t".join((
            str(run_pk), str(start + number), _copy_text(event.kind), _copy_text(event.node_id),
            _copy_text(event.frame_id), _copy_text(event.scope_id), _copy_text(event.lineage_id),
            _copy_text(event.activation_id), "\\N" if index is None else str(index),
            _json_text(_event_data(event)).replace("\\", "\\\\"),
            datetime.fromtimestamp(event.time, tz=UTC).isoformat(),
            "\\N" if duration is None else str(max(0, round(duration * 1000))))))
    lines.append("")
    return "\n".join(lines)


def _json_text(value: Any) -> str:
    """A plain JSON value (a dict of JSON data) as the JSON text ``ExactJSONField`` stores, without the field's
    layers of preparation, encoded in C by ``pydantic_core``: ``json.dumps`` was a third of the cost of storing a
    trace event and most of encoding a checkpoint. The text differs from ``json.dumps``'s only in spacing and in
    leaving non-ASCII characters unescaped: it reads back as the same value, key order included, with NaN and the
    infinities written as ``json.dumps`` writes them. A value ``pydantic_core`` refuses (a lone surrogate in a
    string, an object that is not JSON) goes to ``json.dumps``, which escapes the one and refuses the other as
    before. ``tests/designer/runs/test_event_rows.py`` holds the rows to what the ORM writes."""
    try:
        return pydantic_core.to_json(value, inf_nan_mode="constants").decode()
    except pydantic_core.PydanticSerializationError:
        return json.dumps(value)


#: What a kept checkpoint's upsert writes over the row a superstep redone after a crash left.
_KEPT_UPDATE = ("status = EXCLUDED.status, attempt = EXCLUDED.attempt, engine_trace_seq = EXCLUDED.engine_trace_seq, "
                "state = EXCLUDED.state")
#: The record ``json_to_recordset`` reads an event row from (``_event_records``): ``_EVENT_COLUMNS`` after
#: ``run_id``, typed as the columns are.
_EVENT_RECORD = ("seq integer, kind text, node_id text, frame_id text, scope_id text, lineage_id text, "
                 "activation_id text, index integer, data text, at timestamptz, duration_ms integer")


def _event_records(events: Sequence[TraceEvent], start: int) -> str:
    """``events`` as a JSON array of the objects ``_EVENT_RECORD`` reads, numbered from ``start``: the rows
    ``event_row`` makes. ``data`` goes as a JSON string holding its JSON text, so that the column gets the text
    ``_json_text`` writes, as written (NaN and the infinities included, which JSON itself has no words for)."""
    records = []
    for number, event in enumerate(events):
        duration = event.duration
        records.append({
            "seq": start + number, "kind": event.kind, "node_id": event.node_id or "", "frame_id": event.frame_id or "",
            "scope_id": event.scope_id or "", "lineage_id": event.lineage_id or "",
            "activation_id": event.activation_id or "", "index": event.index, "data": _json_text(_event_data(event)),
            "at": datetime.fromtimestamp(event.time, tz=UTC).isoformat(),
            "duration_ms": None if duration is None else max(0, round(duration * 1000))})
    return _json_text(records)


@functools.cache
def _one_statement_sql() -> tuple[str, str, str, str]:
    """The run's table and the ``WITH`` clauses of ``OrmCheckpointer._save_in_one_statement`` that do not vary
    (PostgreSQL's quoting; built once, not at every save): the kept checkpoint, from the run's row just written,
    the events, from the JSON array ``_event_records`` makes, and the new parts, from ``_part_records``'."""
    quote = connection.ops.quote_name
    # ``ignore_conflicts``, as ``_store_parts`` stores them: a part another checkpointer stored stays as it is.
    parts = (f", parts AS (INSERT INTO {quote(RunStatePart._meta.db_table)} (run_id, key, value) "
             "SELECT run.id, p.key, p.value FROM run, json_to_recordset(%s::json) AS p(key text, value text) "
             "ON CONFLICT DO NOTHING)")
    kept = (f", kept AS (INSERT INTO {quote(RunCheckpoint._meta.db_table)} (run_id, step, status, attempt, "
            "engine_trace_seq, state) SELECT id, %s, %s, %s, %s, run_state FROM run "
            f"ON CONFLICT (run_id, step) DO UPDATE SET {_KEPT_UPDATE})")
    columns = ", ".join(quote(name) for name in _EVENT_COLUMNS)
    values = ", ".join(f"e.{quote(name)}" for name in _EVENT_COLUMNS[1:])
    traced = (f", traced AS (INSERT INTO {quote(RunEvent._meta.db_table)} ({columns}) SELECT run.id, {values} "
              f"FROM run, json_to_recordset(%s::json) AS e({_EVENT_RECORD}))")
    return quote(Run._meta.db_table), kept, traced, parts


def _part_records(new: dict[str, Any]) -> str:
    """New parts as a JSON array of ``{"key", "value"}`` objects, each value the text ``bulk_create`` stores."""
    field = RunStatePart._meta.get_field("value")
    return _json_text([{"key": key, "value": field.get_db_prep_save(pydantic_core.to_jsonable_python(value),
                                                                       connection)}
                       for key, value in sorted(new.items())])


def _nothing_sent() -> bool:
    """Whether the connection's open transaction has sent nothing to PostgreSQL yet (psycopg sends BEGIN with the
    first statement) and holds nothing to run at its commit."""
    return bool(connection.connection.info.transaction_status == TransactionStatus.IDLE
                and not connection.run_on_commit)


@dataclass(frozen=True, slots=True)
class _RowWrite:
    """What a save writes to the run's row: the state and progress JSON text, the counters to add, the hook's
    fields."""

    pk: int
    state_text: str
    progress_text: str
    items: int
    failed: int
    extra: dict[str, Any]


def _keep_checkpoint(run_pk: int, run_state: RunState, data: dict[str, Any], text: str | None = None) -> None:
    """Store ``data`` as the run's kept checkpoint after ``run_state.step``: one upsert, so a superstep redone after a
    crash replaces the checkpoint it left. Written as SQL (the same statement on SQLite and PostgreSQL) rather than
    ``bulk_create(update_conflicts=...)``, which built and compiled a model instance at every superstep."""
    quote = connection.ops.quote_name
    state = _json_text(data) if text is None else text  # ``text``: ``data`` already encoded (the save's)
    table = quote(RunCheckpoint._meta.db_table)
    with prepared_cursor(connection) as cursor:
        cursor.execute(
            f"INSERT INTO {table} (run_id, step, status, attempt, engine_trace_seq, state) "
            f"VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (run_id, step) DO UPDATE SET {_KEPT_UPDATE}",
            [run_pk, run_state.step, run_state.status, run_state.attempt, run_state.trace_seq, state])


def trace_event(runtime_id: str, row: RunEvent) -> TraceEvent:
    data = row.data if isinstance(row.data, dict) else {}
    time = data.get("time")
    return TraceEvent(
        seq=row.seq,
        kind=row.kind,
        run_id=runtime_id,
        step=int(data.get("step", 0)),
        time=float(time) if isinstance(time, int | float) else row.at.timestamp(),
        scope_id=row.scope_id or None,
        frame_id=row.frame_id or None,
        lineage_id=row.lineage_id or None,
        node_id=row.node_id or None,
        activation_id=row.activation_id or None,
        index=row.index,
        label=data.get("label"),
        attempt=data.get("attempt"),
        duration=data.get("duration", None if row.duration_ms is None else row.duration_ms / 1000),
        summary=data.get("summary"),
    )


def _joined(run_pk: int, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a stored ``Run.run_state``) with its write-once parts put back from ``RunStatePart``."""
    wanted = RunState.parts_left_out(data)
    if not wanted:
        return data
    # SQL, not the ORM (compiling the query cost more than running it; a resume reads this once): the values are
    # JSON text on every database (``ExactJSONField``), SQL NULL for None.
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote('key')}, value FROM {quote(RunStatePart._meta.db_table)} WHERE run_id = %s "
                       f"AND {quote('key')} IN ({', '.join(['%s'] * len(wanted))})", [run_pk, *wanted])
        stored = {key: None if text is None else json.loads(text) for key, text in cursor.fetchall()}
    return RunState.join_parts_data(data, stored)


def run_state_of(run: Run) -> dict[str, Any] | None:
    """The run's latest checkpoint as complete RunState JSON (items included), or None before the first one.
    ``CorruptRunStateError`` when the stored value is not a JSON object or a part it needs is not stored
    (a damaged checkpoint is never taken for "no checkpoint yet", which would start the run over).
    Not checked further: ``designer.runs.checkpoints.checkpoint_of`` is the checked read."""
    if run.run_state is None:
        return None
    if not isinstance(run.run_state, dict):
        raise CorruptRunStateError(f"run {run.pk}: the stored run state is a JSON {_json_kind(run.run_state)}, "
                                   "not an object", run_id=run.runtime_id, field="run_state")
    return _joined(run.pk, run.run_state)


#: Live activations recorded per checkpoint for the run page (a few at once in practice: nesting times
#: concurrency); more are counted but not listed.
PROGRESS_ACTIVATIONS = 50


def progress_of(run_state: RunState) -> dict[str, Any]:
    """The counters the live run page shows, from the live structure only: O(live activations), never O(items)."""
    # ``run_summary``, not ``activation_progress``: the state being saved is the engine's own, and a full
    # integrity check at every checkpoint would cost in proportion to the whole state.
    summary = run_summary(run_state, foreach_limit=PROGRESS_ACTIVATIONS)
    rows = [{"activation_id": row.activation_id, "node_id": row.node_id, "done": row.done, "total": row.total,
             "running": row.running, "failed": row.failed, "parent_activation_id": row.parent_activation_id,
             "parent_index": row.parent_index} for row in summary.foreach]
    return {"step": summary.step, "next_seq": summary.trace_seq, "frames": summary.frames,
            "activations": summary.activations, "foreach": rows}


def _parts_needed(state: Any) -> list[str]:
    """The parts a kept checkpoint's ``state`` needs. Read from the state itself: a list of them stored beside
    each checkpoint held a key per chunk of every growing list, so it grew with the run and made a long run's
    history quadratic in bytes (18 KB a checkpoint at 80k collected results, against a 4 KB state)."""
    return RunState.parts_left_out(state) if isinstance(state, dict) else []


def _json_kind(value: Any) -> str:
    return {str: "string", list: "array", bool: "boolean", int: "number", float: "number"}.get(type(value), "value")


class OrmCheckpointer:
    """Saves RunStates in ``Run.run_state`` and their trace events in ``RunEvent``, one transaction per save.

    ``team``: whose runs this checkpointer reads and writes.
    ``owner``: the lease holder it writes for (None: no lease check, for tools and tests).
    ``extra_fields(run_state)``: more ``Run`` fields to write with a save (the executor clears an applied
    ``resume_request`` in the very transaction that records the resume's effect); called inside the save's
    transaction, so other rows it writes commit with the save. It must write only through ``django.db.connection``
    on the calling thread: the save reads that connection's state to tell whether the hook wrote anything, and
    when it wrote nothing, the save on PostgreSQL is one statement outside a transaction of its own
    (``_save_in_one_statement``). A write through another database alias would commit on its own whatever
    becomes of the save, so it is refused (``HookWroteElsewhereError``, checked only when several databases are
    configured: with one there is nowhere else to write through Django); one from another thread, or a
    connection opened outside Django, is not seen at all.
    ``create_run(run_state)``: makes the row for a run id the team does not have yet (tests); without it such a
    save raises ``UnknownRunError``, since the designer creates every row before its first checkpoint.
    After each save ``cancel_requested`` holds the run's flag as read inside that transaction.
    ``hold_final``: a save whose state is ``FINAL`` leaves its transaction open; ``final()`` commits it with what
    its block writes (the worker's outcome), ``settle()`` commits it alone. The run's end is then one commit
    where it was three (issue 33), and a process that dies before it has committed none of them: the run still
    holds its previous checkpoint and its lease, and recovery re-drives it from there.
    """

    def __init__(
        self,
        team: Team | int,
        *,
        owner: str | None = None,
        extra_fields: Callable[[RunState], dict[str, Any]] | None = None,
        create_run: Callable[[RunState], Run] | None = None,
        history: Any = _SETTING,
        hold_final: bool = False,
    ) -> None:
        self.history_policy: HistoryPolicy | None = history_policy() if history is _SETTING else history
        self.team_id = team.pk if isinstance(team, Team) else int(team)
        self.owner = owner
        self.extra_fields = extra_fields
        self.create_run = create_run
        self.cancel_requested = False
        self.saves = 0
        self._pks: dict[str, int] = {}  # runtime id -> row; a row's runtime id never changes
        self._ledgers: dict[int, PartLedger] = {}  # row -> what of its parts this checkpointer has stored
        self._next_seq: dict[int, int] = {}  # row -> the trace number after this checkpointer's last stored event
        self.hold_final = hold_final
        self._held: transaction.Atomic | None = None  # the final save's transaction, not committed yet

    @contextlib.contextmanager
    def final(self) -> Iterator[None]:
        """Commit the held final save (if any) together with what the block writes. A block that raises has
        written nothing (make it an ``atomic`` block of its own), and the save still commits, as it would have
        on its own."""
        held, self._held = self._held, None
        if held is None:
            yield
            return
        try:
            yield
        finally:
            held.__exit__(None, None, None)

    def settle(self) -> None:
        """Commit the held final save, if any (the run ends some other way than through ``final``)."""
        held, self._held = self._held, None
        if held is not None:
            held.__exit__(None, None, None)

    def remember(self, run_id: str, pk: int, *, trace_next: int | None = None, unsaved: bool = False) -> None:
        """Say which row holds ``run_id`` (in this checkpointer's team), when the caller has just read it: the
        first save then skips looking it up (a worker's claim reads the row anyway). ``trace_next``: the number
        after the run's last trace event, when the caller read it holding the run's lease, so that nobody else
        appends to the trace meanwhile (a distributed foreach's batches do: ``save`` reads it then).
        ``unsaved``: the row has no checkpoint yet, so no parts either (they are stored only with one): the first
        save need not look for parts an earlier process left."""
        self._pks[run_id] = pk
        if trace_next is not None:
            self._next_seq[pk] = trace_next
        if unsaved:
            self._ledgers[pk] = PartLedger(fresh=False)

    def _rows(self, run_id: str) -> Any:
        return Run.objects.filter(team_id=self.team_id, runtime_id=run_id)

    def _pk(self, run_state: RunState) -> int:
        run_id = run_state.run_id
        pk = self._pks.get(run_id)
        if pk is None:
            pk = self._rows(run_id).values_list("pk", flat=True).first()
            if pk is None:
                if self.create_run is None or self.owner is not None:
                    raise UnknownRunError(f"no run {run_id!r} in team {self.team_id} to checkpoint", run_id=run_id)
                pk = self.create_run(run_state).pk
        return pk

    def _store_parts(self, pk: int, delta: CheckpointDelta, run_state: RunState, state_text: str) -> None:
        """Write the parts that are new, drop those nothing refers to any more."""
        if delta.new:
            rows = [RunStatePart(run_id=pk, key=key, value=pydantic_core.to_jsonable_python(value))
                    for key, value in sorted(delta.new.items())]
            # ignore_conflicts: a new checkpointer (another worker) meets parts stored before it started.
            RunStatePart.objects.bulk_create(rows, ignore_conflicts=True)
        if self.history_policy is not None:
            self._store_history(pk, delta, run_state, self.history_policy, state_text)
        elif delta.fresh:
            # The first save of this checkpointer: parts an earlier process left may be dead.
            live = delta.live_keys()
            stale = [key for key in RunStatePart.objects.filter(run_id=pk).values_list("key", flat=True)
                     if key not in live]
            if stale:
                RunStatePart.objects.filter(run_id=pk, key__in=stale).delete()
        elif delta.gone:
            RunStatePart.objects.filter(run_id=pk, key__in=delta.gone).delete()

    @staticmethod
    def _store_history(pk: int, delta: CheckpointDelta, run_state: RunState, policy: HistoryPolicy,
                       state_text: str) -> None:
        """Keep this checkpoint, prune what the policy lets go, drop the parts neither it nor the latest needs."""
        candidates = set(delta.gone)

        def kept() -> Any:  # built only when used: most saves (``all``) need no query of the kept rows
            return RunCheckpoint.objects.filter(run_id=pk)

        if policy.ends(run_state):
            kept().delete()
            candidates.update(RunStatePart.objects.filter(run_id=pk).values_list("key", flat=True))
        else:
            _keep_checkpoint(pk, run_state, delta.data, state_text)
            if policy.keep_last is not None:
                # Only a bounded policy drops checkpoints, and then at most keep_last + 1 rows are kept here. With
                # ``all``, listing the steps at every save would read every checkpoint so far: O(supersteps) a
                # save, quadratic in a long run (the worker's CPU per item grew 2.65x from 1k to 100k items).
                steps = list(kept().values_list("step", flat=True))
                dropped = set(steps) - policy.keep(steps)
                if dropped:
                    for state in kept().filter(step__in=dropped).values_list("state", flat=True):
                        candidates.update(_parts_needed(state))
                    kept().filter(step__in=dropped).delete()
            if delta.fresh:
                # Parts an earlier process stored may be needed by nothing kept now.
                candidates.update(RunStatePart.objects.filter(run_id=pk).values_list("key", flat=True))
            elif policy.keep_last is None:
                return  # every part that was ever live is needed by a kept checkpoint
        # What the latest state still needs stays: with the last N kept, a dropped checkpoint's parts (the items,
        # the input, the chunks of growing lists) are nearly always still live, and then no kept state is read.
        candidates -= delta.live_keys()
        if not candidates:
            return
        referenced: set[str] = set()
        for state in kept().values_list("state", flat=True):
            referenced.update(_parts_needed(state))
        unneeded = candidates - referenced
        if unneeded:
            RunStatePart.objects.filter(run_id=pk, key__in=sorted(unneeded)).delete()

    def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        self.settle()  # a save after a final one (never from one drive): the one before commits first
        pk_known = self._pks.get(run_state.run_id)
        ledger = self._ledgers.get(pk_known) if pk_known is not None else None
        delta = run_state.checkpoint_delta(ledger or PartLedger())
        encode = _json_text
        state_text = encode(delta.data)  # once: the run's row and the kept checkpoint hold the same text
        progress_text = encode(progress_of(run_state))
        # Summed in the database, in the transaction that stores these events: a superstep rolled back by a
        # crash is counted when it is redone, never twice.
        items = sum(1 for event in events if event.kind == "item_completed")
        failed = sum(1 for event in events if event.kind == "node_failed")
        held = self.hold_final and run_state.status in FINAL
        opened = transaction.atomic()
        opened.__enter__()
        atomic: transaction.Atomic | None = opened
        try:
            # Inside the transaction: what the hook writes besides its fields commits with this save or not at all.
            extra = self._hook_fields(run_state) if self.extra_fields is not None else {}
            pk = self._pk(run_state)
            row = _RowWrite(pk, state_text, progress_text, items, failed, extra)
            # While the run has distributed batches, their commits append to its trace from other workers (even
            # as the run itself wakes, for a backoff of its own): read where the trace ends. Otherwise it ends
            # where this checkpointer's last save left it.
            batches = any(activation.distributed for activation in run_state.activations.values())
            next_seq = None if batches else self._next_seq.get(pk)
            if self._in_one_statement(delta, run_state, events, next_seq):
                if not held and _nothing_sent():
                    # The hook wrote nothing and the row was known: this statement is all the save writes, and on
                    # its own it is a transaction, without BEGIN and COMMIT (two of a save's three round trips).
                    atomic = None
                    opened.__exit__(None, None, None)
                cancelled, next_seq = self._save_in_one_statement(row, run_state, delta, events, next_seq)
            else:
                cancelled = self._update_run(row)
                self._store_parts(pk, delta, run_state, state_text)
                if events:
                    next_seq = append_events(pk, events, first=events[0].seq, next_seq=next_seq)
                    if batches:
                        next_seq = None
            self.cancel_requested = cancelled
        except BaseException:
            if atomic is not None:
                atomic.__exit__(*sys.exc_info())
            raise
        if held:
            # Nothing is saved after it: what this checkpointer remembers below is never used unless it commits.
            self._held = atomic
        elif atomic is not None:
            atomic.__exit__(None, None, None)
        # Only once committed: a rolled-back transaction must not be remembered.
        self._pks[run_state.run_id] = pk
        if next_seq is None:
            self._next_seq.pop(pk, None)
        else:
            self._next_seq[pk] = next_seq
        ledger = self._ledgers.get(pk) or PartLedger()
        ledger.apply(delta)
        self._ledgers[pk] = ledger
        self.saves += 1

    def _hook_fields(self, run_state: RunState) -> dict[str, Any]:
        """``extra_fields(run_state)``, with every other database's connection refusing writes meanwhile."""
        assert self.extra_fields is not None
        others = [alias for alias in connections if alias != connection.alias]
        if not others:
            return self.extra_fields(run_state)
        with contextlib.ExitStack() as refusing:
            for alias in others:
                refusing.enter_context(connections[alias].execute_wrapper(_refuse_writes))
            return self.extra_fields(run_state)

    def _in_one_statement(self, delta: CheckpointDelta, run_state: RunState, events: Sequence[TraceEvent],
                          next_seq: int | None) -> bool:
        """Whether the save writes only the run's row, its kept checkpoint, its new parts and its events, with
        their numbers known, so that on PostgreSQL one statement can write them all (``_save_in_one_statement``):
        a run's first save, which stores its input as a part, too (issue 33). Parts to drop (or to look for, from
        an earlier process), a bounded or ending history, and a trace whose end must be read after the row is locked
        (distributed batches) take the statements of ``_update_run``, ``_store_parts`` and ``append_events``."""
        if connection.vendor != "postgresql" or delta.fresh or (events and next_seq is None):
            return False
        policy = self.history_policy
        if policy is None:
            return not delta.gone
        # ``all``: nothing is dropped, not even a part the state no longer names (a kept checkpoint needs it).
        return policy.keep_last is None and not policy.ends(run_state)

    def _save_in_one_statement(self, row: _RowWrite, run_state: RunState, delta: CheckpointDelta,
                               events: Sequence[TraceEvent], next_seq: int | None) -> tuple[bool, int | None]:
        """The run's row, its new parts, its kept checkpoint and its events in one PostgreSQL statement (its
        ``WITH`` clauses write; nothing else is inserted when the row was not updated): one round trip where the
        UPDATE, the parts' and the checkpoint's INSERTs and the events' COPY took five. The kept checkpoint takes
        its state from the row just written, so the state goes to the server once; the events and the parts go as
        JSON arrays that ``json_to_recordset`` spreads into rows (``_event_records``, ``_part_records``).
        Whether a cancel is asked, and the number after the last event stored."""
        sets, where, params = self._run_assignments(row)
        run_table, kept_sql, traced_sql, parts_sql = _one_statement_sql()
        sql = [f"WITH run AS (UPDATE {run_table} SET {sets} WHERE {where} RETURNING id, cancel_requested, run_state)"]
        if delta.new:
            sql.append(parts_sql)
            params.append(_part_records(delta.new))
        if self.history_policy is not None:
            sql.append(kept_sql)
            params += [run_state.step, run_state.status, run_state.attempt, run_state.trace_seq]
        if events:
            start = events[0].seq if next_seq is None else max(events[0].seq, next_seq)
            sql.append(traced_sql)
            params.append(_event_records(events, start))
            next_seq = start + len(events)
        sql.append(" SELECT cancel_requested FROM run")
        with prepared_cursor(connection) as cursor:
            cursor.execute("".join(sql), params)
            found = cursor.fetchone()
        if found is None:
            raise LeaseLost(f"run {row.pk}: lease no longer held by {self.owner}; checkpoint discarded")
        return bool(found[0]), next_seq

    def _run_assignments(self, row: _RowWrite) -> tuple[str, str, list[Any]]:
        """The SET list, the WHERE condition and their parameters of a save's UPDATE of the run's row: the state,
        the counters, the lease renewed when this checkpointer writes for an owner (and only while it holds the
        lease), and the hook's ``extra`` fields, prepared as the ORM's ``update`` prepares them. SQL, not the
        ORM: compiling the update at every superstep cost more than running it."""
        quote = connection.ops.quote_name
        sets = ["run_state = %s", "progress = %s"]
        values: list[Any] = [row.state_text, row.progress_text]
        if row.items:
            sets.append("items_done = items_done + %s")
            values.append(row.items)
        if row.failed:
            sets.append("failures = failures + %s")
            values.append(row.failed)
        for name, value in row.extra.items():
            field = Run._meta.get_field(name)
            sets.append(f"{quote(field.column)} = %s")
            values.append(field.get_db_prep_save(value, connection))
        where = ["id = %s"]
        keys: list[Any] = [row.pk]
        if self.owner is not None:
            if connection.vendor == "postgresql":  # the database's clock, as ``lease.expiry_in`` writes it
                sets.append(f"lease_expires_at = {DATABASE_EXPIRY_SQL}")
                values.append(lease_seconds())
            else:
                sets.append("lease_expires_at = %s")
                values.append(connection.ops.adapt_datetimefield_value(expiry_in(lease_seconds())))
            where.append("lease_owner = %s")
            keys.append(self.owner)
        return ", ".join(sets), " AND ".join(where), [*values, *keys]

    def _update_run(self, row: _RowWrite) -> bool:
        """Write the save's fields to the run's row if this owner holds it; whether a cancel is asked (read by the
        write itself, ``RETURNING``: the row stays locked until commit, so the flag cannot change meanwhile).
        ``LeaseLost`` when the row was not written."""
        sets, where, params = self._run_assignments(row)
        with prepared_cursor(connection) as cursor:
            cursor.execute(f"UPDATE {connection.ops.quote_name(Run._meta.db_table)} SET {sets} WHERE {where} "
                           "RETURNING cancel_requested", params)
            found = cursor.fetchone()
        if found is None:
            raise LeaseLost(f"run {row.pk}: lease no longer held by {self.owner}; checkpoint discarded")
        return bool(found[0])

    def load(self, run_id: str) -> RunState:
        """The latest checkpoint: ``Run.run_state`` is its snapshot, so a load reads one row and the parts it
        names, however long the run's history (issue 33: resume flat, within 2 ms after 10,000 steps).

        The same query reads where the trace ends, and the load tells this checkpointer what it found (the row,
        the parts stored, the next trace number), so the resumed run's first save is as cheap as any other: no
        lookup of the row or of the trace's end, no rewrite of the parts, no sweep for parts an earlier process
        left (every part the stored state names is there; the run's trace and parts go with ``delete``)."""
        quote = connection.ops.quote_name
        with prepared_cursor(connection) as cursor:
            # SQL, not the ORM: compiling the query cost more than running it. The order is ``Run``'s own (the
            # newest row of that runtime id in the team, as ``_rows(...).first()`` reads it).
            cursor.execute(
                f"SELECT r.id, r.run_state, (SELECT MAX(e.seq) FROM {quote(RunEvent._meta.db_table)} e "
                f"WHERE e.run_id = r.id) FROM {quote(Run._meta.db_table)} r WHERE r.team_id = %s AND "
                "r.runtime_id = %s ORDER BY r.created_at DESC, r.id DESC LIMIT 1", [self.team_id, run_id])
            found = cursor.fetchone()
        if found is None or found[1] is None:
            raise CheckpointNotFoundError(f"no checkpoint for run {run_id!r}", run_id=run_id)
        pk, text, last = found
        try:
            data = json.loads(text)  # the column holds JSON text on every database (``ExactJSONField``)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise CorruptRunStateError(f"run {run_id!r}: the stored run_state is not a JSON object", run_id=run_id)
        # Parsed for the engine: the state is new and this checkpointer keeps no reference to it (the ledger holds
        # keys and counts), so the resume that follows may work on it in place instead of deep-copying it.
        run_state = parse_run_state(_joined(pk, data))
        self._pks[run_id] = pk
        if any(activation.distributed for activation in run_state.activations.values()):
            self._next_seq.pop(pk, None)  # its batches append to the trace from other workers: read at each save
        else:
            self._next_seq[pk] = 0 if last is None else last + 1
        ledger = PartLedger()
        ledger.apply(run_state.checkpoint_delta(ledger))  # every part the loaded state names is stored
        self._ledgers[pk] = ledger
        return run_state

    def history(self, run_id: str) -> list[CheckpointInfo]:
        rows = RunCheckpoint.objects.filter(run__team_id=self.team_id, run__runtime_id=run_id).order_by("step")
        return [CheckpointInfo(step, status, attempt, trace_seq)
                for step, status, attempt, trace_seq in rows.values_list("step", "status", "attempt",
                                                                          "engine_trace_seq")]

    def load_at(self, run_id: str, step: int) -> RunState:
        row = RunCheckpoint.objects.filter(run__team_id=self.team_id, run__runtime_id=run_id, step=step).first()
        if row is None:
            raise CheckpointNotFoundError(f"run {run_id!r} has no kept checkpoint at superstep {step}",
                                          run_id=run_id, step=step)
        return RunState.from_json(checkpoint_state_of(row))

    def load_events(self, run_id: str) -> list[TraceEvent]:
        rows = RunEvent.objects.filter(run__team_id=self.team_id, run__runtime_id=run_id).order_by("seq")
        return [trace_event(run_id, row) for row in rows]

    def delete(self, run_id: str) -> None:
        """Forget the checkpoint and the trace; the ``Run`` row itself stays (it is the designer's record)."""
        with transaction.atomic():
            pks = list(self._rows(run_id).values_list("pk", flat=True))
            RunEvent.objects.filter(run_id__in=pks).delete()
            RunCheckpoint.objects.filter(run_id__in=pks).delete()
            RunStatePart.objects.filter(run_id__in=pks).delete()
            Run.objects.filter(pk__in=pks).update(run_state=None)
        for pk in pks:
            self._ledgers.pop(pk, None)
            self._next_seq.pop(pk, None)
