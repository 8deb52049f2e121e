"""The designer uses the runtime's public surface only (docs/design/designer.md: no workflow semantics in designer)."""

from __future__ import annotations

import ast
from pathlib import Path

import runtime

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
            private_module = any(part.startswith("_") for part in module.split(".")[1:])
            unknown_name = module == "runtime" and name and name not in runtime.__all__
            if private_module or unknown_name:
                offenders.append(f"{path.relative_to(DESIGNER.parent)}:{line} imports {imported}")
    assert not offenders, "designer must use runtime's public surface (runtime.__all__):\n" + "\n".join(offenders)
