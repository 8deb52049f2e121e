from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.urls import reverse

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_home_redirects_anonymous_visitor_to_login(client):
    response = client.get(reverse("home"))

    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=/"


def test_home_lists_workflows_for_logged_in_user(logged_in_client):
    response = logged_in_client.get(reverse("home"))

    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Workflows</h1>" in html
    # The base template wires htmx and CSRF for every page.
    assert "htmx" in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html
    assert f'action="{reverse("logout")}"' in html


def test_login_page_renders_form(client):
    response = client.get(reverse("login"))

    assert response.status_code == 200
    assert 'name="username"' in response.content.decode()


def test_login_with_real_password_lands_on_home(client, user, password):
    response = client.post(reverse("login"), {"username": user.username, "password": password})

    assert response.status_code == 302
    assert response["Location"] == reverse("home")


def test_logout_is_post_only_and_logs_out(logged_in_client):
    response = logged_in_client.post(reverse("logout"))

    assert response.status_code == 302
    assert logged_in_client.get(reverse("home")).status_code == 302


@pytest.mark.django_db
def test_sqlite_runs_in_wal_mode_with_immediate_transactions():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite-specific settings")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] > 0
    assert connection.transaction_mode == "IMMEDIATE"


def test_tasks_use_database_backend():
    from django.tasks import task_backends

    assert type(task_backends["default"]).__name__ == "DatabaseBackend"


def test_api_schema_is_served_to_logged_in_user(logged_in_client):
    response = logged_in_client.get(reverse("api-schema"), {"format": "json"})

    assert response.status_code == 200
    assert response.json()["info"]["title"] == "Trellis API"


def test_editor_bundle_is_built_and_resolvable():
    from django.template import Context, Template

    manifest = Path(settings.DJANGO_VITE["default"]["manifest_path"])
    assert manifest.exists(), "run `make build` (make test does it) before the tests"
    html = Template("{% load django_vite %}{% vite_asset 'static/src/editor/main.jsx' %}").render(Context())
    assert 'src="/static/dist/assets/editor-' in html


# --- runtime stays framework-free -----------------------------------------------

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

        import runtime

        path = runtime.parse_source_path("context.foreach.orders.item")
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


@pytest.mark.django_db
def test_django_system_check_passes_without_warnings():
    from django.core.management import call_command

    # Raises SystemCheckError on any warning, e.g. django-vite's missing manifest.
    call_command("check", fail_level="WARNING")
