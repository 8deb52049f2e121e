"""The public surface of ``runtime``: exactly these names, all importable, errors under one root.

When you add a public name to ``runtime/__init__.py``, add it to ``PUBLIC_NAMES`` here in the same
commit: this test exists so that the surface only changes on purpose.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import runtime
from runtime import WorkflowError

PUBLIC_NAMES = frozenset({
    "RunBudget",
    "RunBudgetExceededError",
    "RunTimeoutError",
    "ActivationProgress",
    "Analysis",
    "AsyncCheckpointer",
    "Barrier",
    "BatchResult",
    "BindingError",
    "BranchCase",
    "BranchNode",
    "CheckpointNotFoundError",
    "CheckpointWriteError",
    "CheckpointDelta",
    "CheckpointInfo",
    "Checkpointer",
    "CorruptRunStateError",
    "Diagnostic",
    "DistributedForeach",
    "Engine",
    "ExecutionFrame",
    "FileCheckpointer",
    "ForkEdits",
    "FrameView",
    "ForkError",
    "ForeachActivation",
    "ForeachContext",
    "ForeachItemsFailedError",
    "ForeachNode",
    "GraphSourcePath",
    "HistoryPolicy",
    "IdFactory",
    "InMemoryCheckpointer",
    "InputBinding",
    "InputValidationError",
    "Interrupt",
    "ItemOutcome",
    "InterruptNode",
    "Lineage",
    "LocalPath",
    "MappingResolver",
    "NodeFailedError",
    "OutputBinding",
    "PartLedger",
    "PathOption",
    "PathSyntaxError",
    "RandomIds",
    "RedriveError",
    "ResumeError",
    "RetryPolicy",
    "Route",
    "RunResult",
    "RunState",
    "RunSummary",
    "RuntimeContext",
    "RuntimeScope",
    "SequentialIds",
    "SqliteCheckpointer",
    "StatePath",
    "StepCall",
    "StepCancelledError",
    "StepExecutor",
    "StepLimitError",
    "StepMemoryError",
    "StepResultTooLargeError",
    "StepTimeoutError",
    "SubgraphDepthError",
    "SubgraphNode",
    "SubgraphResolutionError",
    "TaskError",
    "TaskNode",
    "TaskRegistrationError",
    "TaskRegistry",
    "TaskResultError",
    "TaskSpec",
    "TraceEvent",
    "UnknownNodeError",
    "UnknownTaskError",
    "UnreachableNodeError",
    "Wakeup",
    "Workflow",
    "WorkflowBuildError",
    "WorkflowBuilder",
    "WorkflowError",
    "WorkflowOutput",
    "WorkflowRef",
    "WorkflowResolver",
    "WorkflowRoute",
    "WorkflowValidationError",
    "activation_progress",
    "analyze",
    "schema_type_label",
    "json_type",
    "builtin_registry",
    "check_fork",
    "check_redrive",
    "check_resume",
    "check_run_input",
    "context_path",
    "distributed_foreach",
    "default_registry",
    "document_json_schema",
    "frame_context",
    "live_frames",
    "input_path",
    "is_item_index",
    "parse_local_path",
    "parse_source_path",
    "retry_delay_diagnostics",
    "step_timeout_diagnostics",
    "run_summary",
    "parse_state_path",
    "state_path",
    "task",
})

#: The names docs/design/runtime.md section 9 promises.
SPEC_NAMES = frozenset({
    "WorkflowBuilder", "Workflow", "TaskNode", "ForeachNode", "SubgraphNode", "BranchNode", "InterruptNode",
    "GraphSourcePath", "StatePath", "LocalPath", "input_path", "state_path", "context_path", "parse_source_path",
    "TaskRegistry", "task", "Route", "Engine", "RunResult", "RunState", "ExecutionFrame", "RuntimeScope",
    "RuntimeContext", "ForeachContext", "analyze", "Analysis", "Diagnostic", "PathSyntaxError",
    "WorkflowValidationError", "CorruptRunStateError",
})


def test_all_is_pinned_exactly() -> None:
    assert len(runtime.__all__) == len(set(runtime.__all__)), "duplicate names in runtime.__all__"
    assert set(runtime.__all__) - PUBLIC_NAMES == set(), "new public names: add them to PUBLIC_NAMES"
    assert PUBLIC_NAMES - set(runtime.__all__) == set(), "public names were removed"


def test_every_public_name_is_importable() -> None:
    for name in runtime.__all__:
        assert getattr(runtime, name) is not None, name


def test_the_names_the_spec_promises_are_public() -> None:
    assert SPEC_NAMES <= set(runtime.__all__)


def test_public_errors_share_one_root_and_have_distinct_codes() -> None:
    errors = [getattr(runtime, name) for name in runtime.__all__
              if isinstance(getattr(runtime, name), type) and issubclass(getattr(runtime, name), BaseException)]
    assert errors and all(issubclass(error, WorkflowError) for error in errors)
    codes = [error.code for error in errors]
    assert len(codes) == len(set(codes)), sorted(codes)


def test_runtime_imports_without_django() -> None:
    code = "import sys, runtime, runtime.builtins; print(any(m.split('.')[0] == 'django' for m in sys.modules))"
    root = Path(runtime.__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "False"
