"""The designer uses the runtime's public surface only (docs/design/designer.md: no workflow semantics in designer)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.runtime.test_public_surface import SURFACE

DESIGNER = Path(__file__).resolve().parents[2] / "designer"


def _runtime_imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "runtime":
            found.extend((node.lineno, f"{node.module}:{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "runtime")
    return found


def test_designer_imports_only_public_runtime_names() -> None:
    offenders = []
    for path in sorted(DESIGNER.rglob("*.py")):
        for line, imported in _runtime_imports(path):
            module, _, name = imported.partition(":")
            public = SURFACE.get(module)
            if public is None or (name and name not in public):
                offenders.append(f"{path.relative_to(DESIGNER.parent)}:{line} imports {imported}")
    assert not offenders, ("designer must use runtime's public surface (the __all__ of runtime and its public "
                           "submodules, pinned in tests/runtime/test_public_surface.py):\n" + "\n".join(offenders))


# Keys only a RunState (or one of its activations) has: reading one off a mapping means parsing RunState JSON.
RUN_STATE_KEYS = frozenset({"activations", "frames", "lineages", "barriers", "wakeups", "scopes", "trace_seq",
                            "id_seq", "batch_size", "batches_in_flight", "results_parts"})
# Names the designer gives raw checkpoint JSON; any key read off them is a RunState field.
RUN_STATE_NAMES = frozenset({"checkpoint", "run_state", "rs", "raw", "stored"})
# The designer's own progress column (written by runs.checkpointer.progress_of) reuses two of the words.
OWN_FORMATS = frozenset({"progress"})


def _receiver(node: ast.expr) -> str:
    """The last name of the expression a key is read from: ``checkpoint``, ``metadata`` in ``frame.metadata``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _raw_run_state_reads(source: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            target, key = node.value, node.slice.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant)):
            target, key = node.func.value, node.args[0].value
        else:
            continue
        receiver = _receiver(target)
        if not isinstance(key, str) or receiver in OWN_FORMATS:
            continue
        if key in RUN_STATE_KEYS or receiver in RUN_STATE_NAMES or (key == "foreach" and "meta" in receiver):
            found.append((node.lineno, f"{ast.unparse(target)}[{key!r}]"))
    return found


def test_the_scan_finds_the_raw_reads_the_designer_used_to_make() -> None:
    before = '''
status = checkpoint.get("status")
distributed = [k for k, a in (checkpoint.get("activations") or {}).items() if a.get("batch_size")]
meta = waiting.metadata.get("foreach")
count = len(state["frames"])
shown = progress.get("activations")
'''
    assert sorted(line for line, _ in _raw_run_state_reads(before)) == [2, 3, 3, 4, 5]


def test_no_designer_module_reads_run_state_json_itself() -> None:
    """Which engine call a checkpoint needs and how far a run has got come from ``runtime.run_summary``; anything
    more from the checked ``RunState`` (``designer.runs.checkpoints``) or the runtime's inspection helpers."""
    offenders = [f"{path.relative_to(DESIGNER.parent)}:{line} reads {what}"
                 for path in sorted(DESIGNER.rglob("*.py")) if "migrations" not in path.parts
                 for line, what in _raw_run_state_reads(path.read_text(encoding="utf-8"))]
    assert not offenders, "read RunState through runtime.run_summary or the inspection helpers:\n" + "\n".join(
        offenders)
