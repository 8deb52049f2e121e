"""runtime/ stays framework-free: it imports and works where Django cannot be imported, and no module
under it imports Django, DRF or the designer."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

BLOCK_DJANGO = textwrap.dedent(
    """
    import importlib.abc, sys

    class BlockDjango(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "django" or name.startswith("django."):
                raise ImportError(f"{name} is blocked in this process")
            return None

    sys.meta_path.insert(0, BlockDjango())
    """
)


def test_runtime_works_where_django_cannot_be_imported():
    script = BLOCK_DJANGO + textwrap.dedent(
        """
        try:
            import django
        except ImportError:
            pass
        else:
            raise SystemExit("django import was not blocked")

        import runtime.paths

        path = runtime.paths.parse_source_path("context.foreach.orders.item")
        print(path.root, ".".join(path.parts))
        print(sorted(m for m in sys.modules if m.split(".")[0] == "django"))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["context foreach.orders.item", "[]"]


def _imported_modules(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.append(node.args[0].value)
    return names


def test_no_module_under_runtime_imports_django_or_designer():
    sources = sorted((REPO_ROOT / "runtime").rglob("*.py"))
    assert sources, "runtime/ has no modules"

    offenders = {
        str(source.relative_to(REPO_ROOT)): name
        for source in sources
        for name in _imported_modules(ast.parse(source.read_text(), filename=str(source)))
        if name.split(".")[0] in {"django", "designer", "rest_framework"}
    }

    assert offenders == {}


def test_import_scan_detects_django_imports():
    # Guards the scan above against silently matching nothing.
    tree = ast.parse("import django.db\nfrom django.conf import settings\n")
    assert _imported_modules(tree) == ["django.db", "django.conf"]
