"""The public surface of ``runtime``: a small top level and grouped submodules, each with exactly these names.

When you add a public name, add it to ``SURFACE`` here in the same commit: this test exists so that the surface
only changes on purpose. Hosts import from these modules only (``tests/designer/test_runtime_boundary.py``).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import runtime
from runtime import WorkflowError

SURFACE: dict[str, frozenset[str]] = {
    "runtime": frozenset({
        "Analysis", "Engine", "RunResult", "RunState", "Workflow", "WorkflowBuilder", "WorkflowError", "analyze",
        "task",
    }),
    "runtime.analysis": frozenset({
        "Analysis", "Diagnostic", "PathOption", "analyze", "json_type", "retry_delay_diagnostics",
        "schema_type_label", "step_timeout_diagnostics",
    }),
    "runtime.checkpoint": frozenset({
        "AsyncCheckpointer", "CheckpointDelta", "CheckpointInfo", "Checkpointer", "FileCheckpointer",
        "HistoryPolicy", "InMemoryCheckpointer", "PartLedger", "SqliteCheckpointer",
    }),
    "runtime.document": frozenset({
        "BranchCase", "BranchNode", "ForeachNode", "InputBinding", "InterruptNode", "OutputBinding", "RetryPolicy",
        "SubgraphNode", "TaskNode", "Workflow", "WorkflowBuilder", "WorkflowOutput", "WorkflowRef", "WorkflowRoute",
        "document_json_schema",
    }),
    "runtime.engine": frozenset({
        "BatchResult", "CompileCache", "DistributedForeach", "Engine", "EngineOptions", "ItemOutcome",
        "MappingResolver", "RunBudget", "RunResult", "StepCall", "StepExecutor", "WorkflowResolver",
        "distributed_foreach",
    }),
    "runtime.errors": frozenset({
        "BindingError", "CheckpointNotFoundError", "CheckpointWriteError", "CorruptRunStateError",
        "EngineOptionsError", "ForeachItemsFailedError", "ForkError", "InputValidationError", "NodeFailedError",
        "PathSyntaxError",
        "RedriveError", "ResumeError", "RunBudgetExceededError", "RunTimeoutError", "StepCancelledError",
        "StepLimitError", "StepMemoryError", "StepResultTooLargeError", "StepTimeoutError", "SubgraphDepthError",
        "SubgraphResolutionError", "TaskError", "TaskRegistrationError", "TaskResultError", "UnknownNodeError",
        "UnknownTaskError", "UnreachableNodeError", "WorkflowBuildError", "WorkflowError", "WorkflowValidationError",
    }),
    "runtime.inspect": frozenset({
        "ActivationProgress", "ForkEdits", "FrameView", "RunSummary", "activation_progress", "check_fork",
        "check_redrive", "check_resume", "check_run_input", "frame_context", "live_frames", "run_summary",
    }),
    "runtime.paths": frozenset({
        "GraphSourcePath", "LocalPath", "StatePath", "context_path", "input_path", "is_item_index",
        "parse_local_path", "parse_source_path", "parse_state_path", "state_path",
    }),
    "runtime.secrets": frozenset({
        "MappingSecrets", "SECRET_NAME", "SecretNotFoundError", "SecretResolver", "secret_diagnostics",
    }),
    "runtime.state": frozenset({
        "Barrier", "ExecutionFrame", "ForeachActivation", "ForeachContext", "IdFactory", "Interrupt", "Lineage",
        "RandomIds", "RunState", "RuntimeContext", "RuntimeScope", "SequentialIds", "TraceEvent", "Wakeup",
        "parse_run_state",
    }),
    "runtime.tasks": frozenset({
        "Route", "TaskRegistry", "TaskSpec", "builtin_registry", "default_registry", "task",
    }),
}

#: The names docs/design/runtime.md section 9 promises, wherever they now live.
SPEC_NAMES = frozenset({
    "WorkflowBuilder", "Workflow", "TaskNode", "ForeachNode", "SubgraphNode", "BranchNode", "InterruptNode",
    "GraphSourcePath", "StatePath", "LocalPath", "input_path", "state_path", "context_path", "parse_source_path",
    "TaskRegistry", "task", "Route", "Engine", "RunResult", "RunState", "ExecutionFrame", "RuntimeScope",
    "RuntimeContext", "ForeachContext", "analyze", "Analysis", "Diagnostic", "PathSyntaxError",
    "WorkflowValidationError", "CorruptRunStateError",
})


def _public(module: str) -> list[str]:
    return list(importlib.import_module(module).__all__)


def test_each_modules_all_is_pinned_exactly() -> None:
    for module, names in SURFACE.items():
        found = _public(module)
        assert len(found) == len(set(found)), f"duplicate names in {module}.__all__"
        assert set(found) - names == set(), f"new public names in {module}: add them to SURFACE"
        assert names - set(found) == set(), f"public names were removed from {module}"


def test_the_top_level_stays_small() -> None:
    assert len(runtime.__all__) <= 10, runtime.__all__


def test_every_public_name_is_importable_and_public_in_one_submodule_only() -> None:
    homes: dict[object, list[str]] = {}
    for module in SURFACE:
        for name in _public(module):
            value = getattr(importlib.import_module(module), name)
            assert value is not None, f"{module}.{name}"
            if module != "runtime":
                homes.setdefault(value, []).append(f"{module}.{name}")
    assert [places for places in homes.values() if len(places) > 1] == []


def test_the_names_the_spec_promises_are_public() -> None:
    public = {name for module in SURFACE for name in _public(module)}
    assert SPEC_NAMES <= public, SPEC_NAMES - public


def test_public_errors_share_one_root_and_have_distinct_codes() -> None:
    errors = [getattr(importlib.import_module(module), name) for module in SURFACE for name in _public(module)]
    errors = list({error for error in errors if isinstance(error, type) and issubclass(error, BaseException)})
    assert errors and all(issubclass(error, WorkflowError) for error in errors)
    codes = [error.code for error in errors]
    assert len(codes) == len(set(codes)), sorted(codes)
    assert {error.__name__ for error in errors} - set(SURFACE["runtime.errors"]) <= {"SecretNotFoundError"}


def test_runtime_imports_without_django() -> None:
    code = "import sys, runtime, runtime.builtins; print(any(m.split('.')[0] == 'django' for m in sys.modules))"
    root = Path(runtime.__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "False"
