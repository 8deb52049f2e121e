"""The command line: run, resume an interrupt, show, and refusals.

The commands are driven through ``main()`` in this process (what they print and the exit code are all a
subprocess would add); one test runs ``python -m runtime`` as a real subprocess, the way a user does.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest

from runtime import Workflow, WorkflowBuilder
from runtime._cli import main
from runtime.checkpoint import SqliteCheckpointer
from runtime.paths import input_path, state_path

REPO = Path(__file__).resolve().parents[2]
TASKS = "tests.runtime.cli_tasks"


def doubling_workflow(*, delay: float = 0.0, concurrency: int = 2) -> Workflow:
    g = WorkflowBuilder("doubling", input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "integer"}}}, "required": ["xs"]},
        state_schema={"type": "object", "properties": {"doubled": {"type": "array", "default": []},
                                                       "sum": {"type": "integer"}}})
    each = g.foreach("each", input_path("xs"), max_concurrency=concurrency)
    d = g.use("slow_double", id="double", input=[{"target": "x", "path": each.item},
                                                 {"target": "delay", "value": delay}],
              output=[{"source": ".", "target": "doubled", "mode": "append"}])
    t = g.use("total", id="sum", input=[{"target": "values", "path": state_path("doubled")}],
              output=[{"source": ".", "target": "sum"}])
    g.chain(each, "loop", d, "ok", each, "done", t)
    g.output("sum", state_path("sum"))
    g.output("doubled", state_path("doubled"))
    return g.build()


def approval_workflow() -> Workflow:
    g = WorkflowBuilder("approve", state_schema={"type": "object", "properties": {"answer": {}}})
    g.interrupt("ask", prompt="Proceed?", labels=["yes", "no"],
                resume_schema={"type": "object", "properties": {"why": {"type": "string"}}, "required": ["why"]},
                output=[{"source": "why", "target": "answer"}])
    g.output("answer", state_path("answer"))
    return g.build()


def write(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@dataclass(frozen=True, slots=True)
class Done:
    """What one command did: its exit code and what it wrote."""

    returncode: int
    stdout: str
    stderr: str


def cli(*args: str, stdin: str | None = None) -> Done:
    """``python -m runtime ARGS`` in this process: ``main()`` with its standard streams captured."""
    out, err = io.StringIO(), io.StringIO()
    saved_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin or "")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        sys.stdin = saved_stdin
    return Done(code, out.getvalue(), err.getvalue())


def test_run_prints_the_result_json_from_a_real_subprocess(tmp_path: Path) -> None:
    workflow = write(tmp_path / "wf.json", doubling_workflow().model_dump(mode="json"))
    source = write(tmp_path / "in.json", {"xs": [1, 2, 3]})
    done = subprocess.run([sys.executable, "-m", "runtime", "run", workflow, "--input", source, "--tasks", TASKS],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed"
    assert result["output"] == {"sum": 12, "doubled": [2, 4, 6]}
    assert result["run_id"].startswith("run_") and result["error"] is None


def test_input_from_stdin_and_inline_and_trace_flag(tmp_path: Path) -> None:
    workflow = write(tmp_path / "wf.json", doubling_workflow().model_dump(mode="json"))
    piped = cli("run", workflow, "--input", "-", "--tasks", TASKS, "--compact", "--trace", stdin='{"xs": [5]}')
    assert piped.returncode == 0, piped.stderr
    assert len(piped.stdout.strip().splitlines()) == 1
    result = json.loads(piped.stdout)
    assert result["output"]["sum"] == 10
    assert result["trace"][0]["kind"] == "run_started" and result["trace"][-1]["kind"] == "run_completed"
    assert main(["run", workflow, "--input-json", '{"xs": [1]}', "--tasks", TASKS, "--ids", "sequential"]) == 0


def test_interrupt_then_resume_through_the_checkpoint_directory(tmp_path: Path) -> None:
    workflow = write(tmp_path / "wf.json", approval_workflow().model_dump(mode="json"))
    directory = str(tmp_path / "runs")
    paused = cli("run", workflow, "--tasks", TASKS, "--checkpoint-dir", directory, "--run-id", "r1",
                 "--ids", "sequential")
    assert paused.returncode == 3, paused.stderr
    result = json.loads(paused.stdout)
    assert result["status"] == "interrupted"
    (interrupt,) = result["interrupts"]
    assert interrupt["prompt"] == "Proceed?" and interrupt["labels"] == ["yes", "no"]

    refused = cli("resume", "r1", "--checkpoint-dir", directory, "--tasks", TASKS,
                  "--interrupt", interrupt["interrupt_id"], "--value", '{"why": 3}')
    assert refused.returncode == 2
    assert json.loads(refused.stdout)["error"]["code"] == "resume.invalid"

    shown = cli("show", "r1", "--checkpoint-dir", directory)
    assert shown.returncode == 3 and json.loads(shown.stdout)["status"] == "interrupted"

    resumed = cli("resume", "r1", "--checkpoint-dir", directory, "--tasks", TASKS,
                  "--interrupt", interrupt["interrupt_id"], "--value", '{"why": "because"}', "--label", "no")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == {"answer": "because"}

    history = cli("show", "r1", "--checkpoint-dir", directory, "--trace")
    shown_run = json.loads(history.stdout)
    assert shown_run["status"] == "completed" and shown_run["frames"] == []
    kinds = [e["kind"] for e in shown_run["trace"]]
    assert kinds[0] == "run_started" and "resumed" in kinds and kinds[-1] == "run_completed"
    assert [e["seq"] for e in shown_run["trace"]] == list(range(len(kinds)))


@pytest.mark.parametrize(("args", "message"), [
    (["--input-json", '{"xs": "no"}'], "input.invalid"),
    (["--input-json", "{not json"], "not JSON"),
    (["--tasks", "no.such.module"], "cannot import"),
])
def test_refusals_exit_2_with_a_readable_reason(tmp_path: Path, args: list[str], message: str) -> None:
    workflow = write(tmp_path / "wf.json", doubling_workflow().model_dump(mode="json"))
    base = ["run", workflow, "--tasks", TASKS]
    done = cli(*base, *args)
    assert done.returncode == 2
    assert message in done.stdout + done.stderr


def run_one_node(tmp_path: Path, workflow_id: str, task: str, node_id: str) -> tuple[int, dict[str, Any]]:
    """``run`` of a workflow whose one node calls ``task``: the exit code and the error it printed."""
    g = WorkflowBuilder(workflow_id)
    g.use(task, id=node_id)
    workflow = write(tmp_path / "wf.json", g.build().model_dump(mode="json"))
    done = cli("run", workflow, "--tasks", TASKS)
    return done.returncode, json.loads(done.stdout)["error"]


def test_invalid_workflow_is_refused_with_diagnostics(tmp_path: Path) -> None:
    code, error = run_one_node(tmp_path, "broken", "missing_task", "n")
    assert code == 2
    assert error["code"] == "workflow.invalid" and error["diagnostics"]


def test_failed_run_exits_1_with_the_node_error(tmp_path: Path) -> None:
    code, error = run_one_node(tmp_path, "failing", "explode", "bang")
    assert code == 1
    assert error["code"] == "node.failed" and error["node_id"] == "bang"
    assert error["cause"] == {"type": "RuntimeError", "message": "kaboom"}


def test_unusable_run_id_is_refused(tmp_path: Path) -> None:
    workflow = write(tmp_path / "wf.json", doubling_workflow().model_dump(mode="json"))
    done = cli("run", workflow, "--input-json", '{"xs": [1]}', "--tasks", TASKS, "--no-builtins",
               "--checkpoint-dir", str(tmp_path / "runs"), "--run-id", "../bad")
    assert done.returncode == 2  # an unusable run id is refused before anything runs
    assert "cannot name a checkpoint file" in done.stderr


def test_resume_of_unknown_run_is_refused(tmp_path: Path) -> None:
    done = cli("resume", "nope", "--checkpoint-dir", str(tmp_path), "--tasks", TASKS)
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "checkpoint.not_found"


# -- trace retention (in-process) ---------------------------------------------------


def _run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_memory_keeps_the_last_events_only_and_says_how_many_were_dropped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workflow = write(tmp_path / "wf.json", doubling_workflow().model_dump(mode="json"))
    code, result, err = _run_main(capsys, "run", workflow, "--input-json", json.dumps({"xs": list(range(20))}),
                                  "--tasks", TASKS, "--keep-trace", "5", "--trace")
    assert code == 0 and result["output"]["sum"] == 380
    assert len(result["trace"]) == 5 and result["trace"][-1]["kind"] == "run_completed"
    assert result["trace_dropped"] == result["trace"][0]["seq"] > 40
    assert "shows the last 5 of" in err


def test_every_event_is_streamed_to_the_checkpoint_and_the_trace_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workflow = write(tmp_path / "wf.json", doubling_workflow().model_dump(mode="json"))
    trace_file = tmp_path / "trace.jsonl"
    code, result, _ = _run_main(capsys, "run", workflow, "--input-json", json.dumps({"xs": list(range(20))}),
                                "--tasks", TASKS, "--keep-trace", "0", "--trace", "--checkpoint-dir",
                                str(tmp_path / "runs"), "--run-id", "r1", "--trace-file", str(trace_file))
    assert code == 0
    seqs = [e["seq"] for e in result["trace"]]
    assert seqs == list(range(len(seqs))) and len(seqs) > 40  # all of them, although memory kept none
    assert "trace_dropped" not in result
    streamed = [json.loads(line) for line in trace_file.read_text(encoding="utf-8").splitlines()]
    assert streamed == result["trace"]
    code, shown, _ = _run_main(capsys, "show", "r1", "--checkpoint-dir", str(tmp_path / "runs"), "--trace")
    assert shown["trace"] == result["trace"]


def test_resume_prints_the_events_of_its_own_call_from_the_checkpoint(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workflow = write(tmp_path / "wf.json", approval_workflow().model_dump(mode="json"))
    directory = str(tmp_path / "runs")
    code, paused, _ = _run_main(capsys, "run", workflow, "--checkpoint-dir", directory, "--run-id", "r1",
                                "--keep-trace", "0", "--trace")
    assert code == 3
    first = len(paused["trace"])
    code, resumed, _ = _run_main(capsys, "resume", "r1", "--checkpoint-dir", directory, "--keep-trace", "1",
                                 "--interrupt", paused["interrupts"][0]["interrupt_id"], "--value",
                                 '{"why": "ok"}', "--trace")
    assert code == 0
    assert resumed["trace"][0]["seq"] == first and resumed["trace"][0]["kind"] == "resumed"
    assert resumed["trace"][-1]["kind"] == "run_completed"


def test_the_command_line_is_durable_and_bounded_by_default() -> None:
    from runtime._cli import KEEP_TRACE, _checkpointer, build_parser

    args = build_parser().parse_args(["run", "wf.json"])
    assert args.durable is True and args.keep_trace == KEEP_TRACE == 1000
    assert build_parser().parse_args(["run", "wf.json", "--no-durable", "--keep-trace", "0"]).keep_trace == 0
    with TemporaryDirectory() as directory:
        batched = ["resume", "r", "--checkpoint-dir", directory, "--durability", "batched"]
        for argv, durability in ((["run", "wf.json"], "sync"), (["run", "wf.json", "--no-durable"], "off"),
                                 (batched, "batched")):
            with _checkpointer(directory, build_parser().parse_args(argv)) as checkpointer:
                assert checkpointer.durability == durability


def test_a_batched_run_prints_what_is_on_disk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workflow = write(tmp_path / "wf.json", doubling_workflow().model_dump(mode="json"))
    directory = str(tmp_path / "runs")
    code, result, _ = _run_main(capsys, "run", workflow, "--input-json", json.dumps({"xs": list(range(20))}),
                                "--tasks", TASKS, "--checkpoint-dir", directory, "--run-id", "r1",
                                "--durability", "batched", "--trace")
    assert code == 0 and result["output"]["sum"] == 380
    with SqliteCheckpointer(Path(directory) / "runs.sqlite3") as stored:
        assert stored.load("r1").status == "completed"
        assert [e.to_dict() for e in stored.load_events("r1")] == result["trace"]


def test_a_negative_keep_trace_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["run", "wf.json", "--keep-trace", "-3"])
    assert caught.value.code == 2
    assert "'-3' is not a count of events" in capsys.readouterr().err
