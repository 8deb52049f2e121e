"""``python -m runtime``: run, resume and inspect workflows from a shell, for scripting and debugging.

    python -m runtime run WORKFLOW.json --input INPUT.json --tasks MODULE [--checkpoint-dir DIR]
    python -m runtime resume RUN_ID --checkpoint-dir DIR --tasks MODULE [--interrupt ID --value JSON [--label L]]
    python -m runtime show RUN_ID --checkpoint-dir DIR [--trace]

Trace retention: the engine holds at most ``--keep-trace`` events (default
1000) in memory; every event goes to the checkpoint with its superstep and,
with ``--trace-file``, to a JSON-lines file as it happens (flushed every
superstep). ``--trace`` prints this call's events: all of them from the
checkpoint when there is one, else the ones held (with ``trace_dropped``).

``--tasks`` imports a module and uses its ``registry`` (a ``TaskRegistry``), or the
default registry its ``@task`` decorators filled; the built-in tasks are added
unless a name clashes or ``--no-builtins`` is given. A checkpoint directory
holds ``runs.sqlite3`` (``SqliteCheckpointer``: every superstep committed
and fsynced before the next starts, ``--durability sync``, the default;
``--durability batched`` commits the supersteps that queue up behind one
another with one fsync from a background writer, durable whenever the run
stops, and replays at most the supersteps in flight after a crash;
``--no-durable`` (``--durability off``) never fsyncs) and, from ``run``, the workflow
document, so ``resume`` needs only the run id. ``sync`` stays the default because
the command line runs tasks with side effects (``http``, the user's own): after a
kill, ``resume`` redoes at most the one superstep that was running, where
``batched`` may redo up to 64 that had already finished. ``resume`` without ``--interrupt`` continues a run
that was killed mid-way from its last checkpoint.

The result is printed as JSON. Exit status: 0 completed, 1 failed,
2 refused (invalid workflow, input or resume value; usage), 3 interrupted,
4 cancelled.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runtime._document import Workflow
from runtime._engine import Engine, RunResult
from runtime._errors import WorkflowError
from runtime._group_commit import DURABILITY
from runtime._ids import RandomIds, SequentialIds
from runtime._options import DEFAULT_KEEP_TRACE, EngineOptions
from runtime._registry import TaskRegistry, default_registry
from runtime._sqlite import SqliteCheckpointer
from runtime._trace import TraceEvent
from runtime.builtins import builtin_registry

EXIT = {"completed": 0, "failed": 1, "interrupted": 3, "cancelled": 4}
EXIT_REFUSED = 2


class CliError(Exception):
    """A problem with the command line itself (a file that cannot be read, a module that cannot be imported)."""


def _read_json(source: str, what: str) -> Any:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {what} {source!r}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{what} {source!r} is not JSON: {exc}") from None


def _parse_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{what} is not JSON: {exc}") from None


def load_registry(modules: Sequence[str], *, builtins: bool = True) -> TaskRegistry:
    combined = TaskRegistry()
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise CliError(f"cannot import task module {name!r}: {exc}") from None
        found = getattr(module, "registry", None)
        source = found if isinstance(found, TaskRegistry) else default_registry
        for spec in source:
            combined.add(spec)
    if builtins:
        for spec in builtin_registry():
            if spec.name not in combined:
                combined.add(spec)
    return combined


def _load_workflows(directory: str | None) -> dict[object, Workflow]:
    if directory is None:
        return {}
    documents: dict[object, Workflow] = {}
    for path in sorted(Path(directory).glob("*.json")):
        document = Workflow.model_validate(_read_json(str(path), "workflow"))
        documents[document.id] = document
    return documents


CHECKPOINT_FILE = "runs.sqlite3"
#: Trace events the command line holds in memory: bounded, so a long run's memory follows its live frames.
KEEP_TRACE = DEFAULT_KEEP_TRACE


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count of events (0 or more)")
    return value


def _checkpointer(directory: str, args: argparse.Namespace | None = None) -> SqliteCheckpointer:
    """The run's checkpointer; ``args`` None: only reading (no fsync to pay)."""
    if args is None:
        return SqliteCheckpointer(Path(directory) / CHECKPOINT_FILE, durability="off")
    return SqliteCheckpointer(Path(directory) / CHECKPOINT_FILE, durable=args.durable, durability=args.durability)


class TraceFile:
    """Appends each trace event to a JSON-lines file as it happens, flushed at the end of every superstep.

    So the whole trace is on disk however long the run, while the engine keeps only ``--keep-trace`` events
    in memory. Reruns of a superstep after a crash append their events again (the checkpoint is the
    authority on which superstep committed; ``show --trace`` reads it).
    """

    def __init__(self, path: str) -> None:
        try:
            self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise CliError(f"cannot open trace file {path!r}: {exc.strerror}") from None
        self.written = 0

    def __call__(self, event: TraceEvent) -> None:
        self._handle.write(json.dumps(event.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n")
        self.written += 1

    def flush(self, *_superstep: object) -> None:
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


def _engine(args: argparse.Namespace, checkpointer: SqliteCheckpointer | None,
            sink: TraceFile | None = None) -> Engine:
    ids = SequentialIds() if args.ids == "sequential" else RandomIds()
    options = EngineOptions(workflows=_load_workflows(args.workflows), checkpointer=checkpointer, ids=ids,
                            keep_trace=args.keep_trace, trace_sink=sink, on_superstep=sink.flush if sink else None)
    return Engine(load_registry(args.tasks, builtins=not args.no_builtins), options)


def _sink(args: argparse.Namespace) -> TraceFile | None:
    return TraceFile(args.trace_file) if getattr(args, "trace_file", None) else None


_SAFE_RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")


def _stored_workflow(directory: Path, run_id: str) -> Path:
    if not _SAFE_RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise CliError(f"run id {run_id!r} cannot name a checkpoint file: use letters, digits, '_', '.' and '-'")
    return directory / "workflows" / f"{run_id}.json"


def _emit(payload: dict[str, Any], args: argparse.Namespace) -> None:
    indent = None if args.compact else 2
    sys.stdout.write(json.dumps(payload, indent=indent, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _finish(result: RunResult, args: argparse.Namespace, checkpointer: SqliteCheckpointer | None = None,
            first_seq: int = 0) -> int:
    payload = result.to_dict(trace=args.trace)
    if args.trace:
        if checkpointer is not None:
            # The checkpoint holds every event of this call (memory held only the last --keep-trace).
            payload["trace"] = [event.to_dict() for event in checkpointer.load_events(result.run_id)
                                if event.seq >= first_seq]
        else:
            produced = result.run_state.trace_seq - first_seq
            if produced > len(result.trace):
                payload["trace_dropped"] = produced - len(result.trace)
                sys.stderr.write(f"note: --trace shows the last {len(result.trace)} of {produced} events "
                                 f"(--keep-trace); use --checkpoint-dir or --trace-file for all of them\n")
    _emit(payload, args)
    return EXIT[result.status]


def cmd_run(args: argparse.Namespace) -> int:
    document = Workflow.model_validate(_read_json(args.workflow, "workflow"))
    if args.input_json is not None:
        run_input = _parse_json(args.input_json, "--input-json")
    elif args.input is not None:
        run_input = _read_json(args.input, "input")
    else:
        run_input = {}
    checkpointer = _checkpointer(args.checkpoint_dir, args) if args.checkpoint_dir else None
    sink = _sink(args)
    engine = _engine(args, checkpointer, sink)
    run_id = args.run_id or engine.ids.run_id()
    if checkpointer is not None:
        stored = _stored_workflow(Path(args.checkpoint_dir), run_id)
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_text(document.model_dump_json(), encoding="utf-8")
    try:
        with engine:
            return _finish(engine.run(document, run_input, run_id=run_id), args, checkpointer)
    finally:
        if sink is not None:
            sink.close()


def cmd_resume(args: argparse.Namespace) -> int:
    checkpointer = _checkpointer(args.checkpoint_dir, args)
    state = checkpointer.load(args.run_id)
    source = args.workflow or str(_stored_workflow(Path(args.checkpoint_dir), args.run_id))
    document = Workflow.model_validate(_read_json(source, "workflow"))
    first = state.trace_seq
    sink = _sink(args)
    engine = _engine(args, checkpointer, sink)
    try:
        with engine:
            if args.interrupt is None:
                if args.value is not None or args.label is not None:
                    raise CliError("--value and --label answer an interrupt: give --interrupt too")
                return _finish(engine.continue_run(state, workflow=document), args, checkpointer, first)
            value = _parse_json(args.value, "--value") if args.value is not None else {}
            return _finish(engine.resume(state, args.interrupt, value, args.label, workflow=document), args,
                           checkpointer, first)
    finally:
        if sink is not None:
            sink.close()


def cmd_show(args: argparse.Namespace) -> int:
    if not (Path(args.checkpoint_dir) / CHECKPOINT_FILE).is_file():
        raise CliError(f"no checkpoints in {args.checkpoint_dir!r} (it has no {CHECKPOINT_FILE})")
    checkpointer = _checkpointer(args.checkpoint_dir)
    state = checkpointer.load(args.run_id)
    payload: dict[str, Any] = {
        "run_id": state.run_id,
        "status": state.status,
        "step": state.step,
        "output": state.output,
        "state": state.scopes["root"].state if "root" in state.scopes else None,
        "interrupts": [i.to_dict() for i in state.interrupts.values()],
        "error": state.error,
        "frames": [f.model_dump(mode="json") for f in state.frames.values()],
    }
    if args.trace:
        payload["trace"] = [e.to_dict() for e in checkpointer.load_events(args.run_id)]
    _emit(payload, args)
    return EXIT.get(state.status, 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runtime", description="Run Trellis workflows.")
    commands = parser.add_subparsers(dest="command", required=True)

    def common(sub: argparse.ArgumentParser, *, tasks: bool = True) -> None:
        if tasks:
            sub.add_argument("--tasks", action="append", default=[], metavar="MODULE",
                             help="module whose tasks to use (repeatable)")
            sub.add_argument("--no-builtins", action="store_true", help="do not add the built-in tasks")
            sub.add_argument("--workflows", metavar="DIR", help="directory of workflow JSON files for subgraphs")
            sub.add_argument("--ids", choices=("random", "sequential"), default="random",
                             help="id factory (sequential ids are reproducible)")
            sub.add_argument("--durable", action=argparse.BooleanOptionalAction, default=True,
                             help="fsync every checkpoint (the default); --no-durable survives a killed process "
                                  "but not a power cut, and is faster")
            sub.add_argument("--durability", choices=DURABILITY, default=None,
                             help="sync: each superstep on disk before the next starts (the default); batched: "
                                  "supersteps queued behind a background writer share one fsync, the run is on "
                                  "disk whenever it stops and a crash replays at most the supersteps in flight; "
                                  "off: no fsync (overrides --durable)")
            sub.add_argument("--keep-trace", type=_count, default=KEEP_TRACE, metavar="N",
                             help=f"trace events held in memory (default {KEEP_TRACE}, 0 none); the checkpoint "
                                  "and --trace-file get every event as it happens")
            sub.add_argument("--trace-file", metavar="FILE.jsonl",
                             help="append every trace event to this file as it happens (JSON lines)")
        sub.add_argument("--trace", action="store_true", help="include the trace events")
        sub.add_argument("--compact", action="store_true", help="print JSON on one line")

    run = commands.add_parser("run", help="run a workflow")
    run.add_argument("workflow", metavar="WORKFLOW.json")
    run.add_argument("--input", metavar="INPUT.json", help="input file ('-' for stdin)")
    run.add_argument("--input-json", metavar="JSON", help="input given inline")
    run.add_argument("--checkpoint-dir", metavar="DIR")
    run.add_argument("--run-id")
    common(run)
    run.set_defaults(handler=cmd_run)

    resume = commands.add_parser("resume", help="answer an interrupt, or continue a killed run")
    resume.add_argument("run_id", metavar="RUN_ID")
    resume.add_argument("--checkpoint-dir", metavar="DIR", required=True)
    resume.add_argument("--interrupt", metavar="ID")
    resume.add_argument("--value", metavar="JSON")
    resume.add_argument("--label")
    resume.add_argument("--workflow", metavar="WORKFLOW.json", help="root document (default: the stored copy)")
    common(resume)
    resume.set_defaults(handler=cmd_resume)

    show = commands.add_parser("show", help="print a checkpointed run")
    show.add_argument("run_id", metavar="RUN_ID")
    show.add_argument("--checkpoint-dir", metavar="DIR", required=True)
    common(show, tasks=False)
    show.set_defaults(handler=cmd_show)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except CliError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_REFUSED
    except WorkflowError as exc:
        _emit({"status": "refused", "error": exc.to_dict()}, args)
        sys.stderr.write(f"error: {exc.message}\n")
        return EXIT_REFUSED
    except ValueError as exc:  # a document that is not a workflow (pydantic), an unusable run id
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_REFUSED
