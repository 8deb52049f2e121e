"""Import contracts (issue 28), read from the source as CI sees it: no import cycle among the modules of
``designer`` and ``runtime`` (function-local imports count as edges), no function-local import but those a
module cannot do earlier (each listed here with its reason), and the designer's domain packages depend in one
declared direction; every designer module lives in a domain package, in ``designer/core/`` (shared, under every
domain) or is a declared root module. ``runtime`` never importing Django or the designer, and the designer using
only runtime's public names, are ``tests/test_runtime_layering.py`` and ``tests/designer/test_runtime_boundary.py``."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

from runtime._graphs import strongly_connected

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("designer", "runtime")

#: A domain package may import only the domains before it (and designer.core, designer.conf, designer.models).
DOMAIN_ORDER = ("access", "secrets", "workflows", "monitoring", "runs", "triggers", "notifications", "editor")

#: What every domain shares; it imports no domain, so any domain may import it.
SHARED = "core"

#: The designer modules that belong to no domain, and why. Everything else lives in a domain package or core.
ROOT_MODULES = {
    "designer": "the package",
    "designer.apps": "the Django app; ready() wires the domains together",
    "designer.conf": "every TRELLIS_* setting (read by every domain, imports none)",
    "designer.models": "gathers every domain's models, where Django looks for the app's models",
    "designer.admin": "gathers every domain's admin; the team's admin, which shows access and runs together",
    "designer.urls": "orders every domain's pages and API",
    "designer.tasks": "the django.tasks entry points, handed to runs/dispatch.py when the app is ready",
    "designer.settings": "the Django settings",
    "designer.settings_dev": "the development settings",
    "designer.wsgi": "the WSGI entry point",
    "designer.asgi": "the ASGI entry point",
    "designer.gunicorn_conf": "the web server's settings",
    "designer.templatetags": "Django finds template tags only in the app's templatetags package",
    "designer.templatetags.run_tags": "as above",
    "designer.management": "Django finds commands only in the app's management package",
    "designer.management.commands": "as above",
}

#: (module, imported module) -> why the import cannot sit at the top of the module.
FUNCTION_LOCAL = {
    ("designer.apps", "designer.workflows.catalog"): "AppConfig.ready: the app's models are loaded only now",
    ("designer.apps", "designer.conf"): "AppConfig.ready checks every setting once the app is loaded",
    ("designer.apps", "designer.tasks"): "AppConfig.ready wires the task objects into designer.runs.dispatch",
    ("designer.apps", "designer.notifications.receivers"): "AppConfig.ready connects the signal receivers",
    ("designer.apps", "designer.secrets.checks"): "AppConfig.ready registers the deploy check",
    ("designer.apps", "designer.triggers.receivers"): "AppConfig.ready connects the signal receivers",
    ("designer.runs.step_process", "designer.workflows.catalog"): "the forked step process imports Django and the task "
                                                        "modules only once it runs a step, so forks stay small",
    ("designer.runs.task_backend", "django_tasks_db.backend"): "optional: another task backend may be "
                                                               "configured without django-tasks-db installed",
    ("designer.runs.task_backend", "django_tasks_db.models"): "optional, as above",
}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            relative = path.relative_to(REPO).with_suffix("")
            if "migrations" in relative.parts:
                continue
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            found[".".join(parts)] = path
    return found


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


class _ImportFinder(ast.NodeVisitor):
    """Every import statement with whether it sits in a function; those under ``if TYPE_CHECKING:`` are left out
    (they never run, so they make no cycle)."""

    def __init__(self) -> None:
        self.depth = 0
        self.found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            for inner in node.orelse:
                self.visit(inner)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.found.append((node, self.depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.found.append((node, self.depth > 0))


def _imports(module: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, bool]]:
    """(imported module, inside a function) for every import of the module: ``from a import b`` is ``a.b``
    when that is a module, else ``a``."""
    finder = _ImportFinder()
    finder.visit(ast.parse(path.read_text(encoding="utf-8")))
    for node, inside_function in finder.found:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, inside_function
            continue
        base = node.module or ""
        if node.level:
            anchor = _package_of(module, path).split(".")
            anchor = anchor[: len(anchor) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            child = f"{base}.{alias.name}"
            yield (child if child in modules else base), inside_function


@functools.cache  # three tests read the same source
def _graph() -> tuple[dict[str, set[str]], set[tuple[str, str]]]:
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    local: set[tuple[str, str]] = set()
    for name, path in modules.items():
        for imported, inside_function in _imports(name, path, modules):
            if imported in modules and imported != name:
                edges[name].add(imported)
            if inside_function:
                local.add((name, imported))
    return edges, local


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module, each sorted (runtime's own Tarjan)."""
    ordered = {node: sorted(targets) for node, targets in sorted(edges.items())}
    return sorted(sorted(component) for component in strongly_connected(ordered, ordered) if len(component) > 1)


def _domain(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "designer" and parts[1] in DOMAIN_ORDER else None


def test_no_module_imports_itself_back_through_others() -> None:
    edges, _ = _graph()
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_function_local_imports_are_only_those_that_cannot_move_up() -> None:
    _, local = _graph()
    unexplained = sorted(local - set(FUNCTION_LOCAL))
    assert unexplained == [], "move these imports to the top of their module, or say here why they cannot be"
    stale = sorted(set(FUNCTION_LOCAL) - local)
    assert stale == [], "these function-local imports are gone: take them off FUNCTION_LOCAL"


def _is_root_command(module: str) -> bool:
    return module.startswith("designer.management.commands.")


def test_every_designer_module_lives_in_a_domain_or_is_declared() -> None:
    """designer/ is laid out by domain: a module outside the domain packages and core must say here why."""
    stray = sorted(
        module for module in _modules()
        if module.startswith("designer") and _domain(module) is None and not module.startswith(f"designer.{SHARED}")
        and module not in ROOT_MODULES and not _is_root_command(module)
    )
    assert stray == [], "move these into a domain package (or designer/core/), or declare them in ROOT_MODULES"


def test_declared_root_modules_exist() -> None:
    assert sorted(set(ROOT_MODULES) - set(_modules())) == []


def test_core_imports_no_domain_and_no_model() -> None:
    """core sits under every domain: it may use conf and runtime, never a domain, models or the root modules."""
    edges, _ = _graph()
    allowed = {"designer.conf"}
    upward = sorted(
        f"{source} imports {target}"
        for source, targets in edges.items() if source.startswith(f"designer.{SHARED}")
        for target in targets
        if target.startswith("designer") and not target.startswith(f"designer.{SHARED}") and target not in allowed
    )
    assert upward == []


def test_domains_import_no_root_module_but_conf_and_models() -> None:
    """A domain reaches the others only through their own modules (in the declared order), never through the
    root modules that gather them (urls, admin, tasks, apps)."""
    edges, _ = _graph()
    allowed = {"designer", "designer.conf", "designer.models"}
    found = sorted(
        f"{source} imports {target}"
        for source, targets in edges.items() if _domain(source)
        for target in targets
        if target in ROOT_MODULES and target not in allowed
    )
    assert found == []


def test_domains_import_only_the_domains_declared_before_them() -> None:
    edges, _ = _graph()
    rank = {name: position for position, name in enumerate(DOMAIN_ORDER)}
    upward = sorted(
        f"{source} imports {target}"
        for source, targets in edges.items()
        for target in targets
        if (a := _domain(source)) and (b := _domain(target)) and a != b and rank[b] > rank[a]
    )
    assert upward == [], f"domains depend in the order {' < '.join(DOMAIN_ORDER)}"
