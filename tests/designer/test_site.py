"""The site as set up: sign-in pages, the database and task backend settings, the API schema, the built
editor bundle and Django's own system check."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.urls import reverse


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
    # Writers wait for one another in designer.core.sqlite (tests/designer/test_sqlite_backend.py).
    assert connection.patience > 0
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


@pytest.mark.django_db
def test_django_system_check_passes_without_warnings():
    from django.core.management import call_command

    # Raises SystemCheckError on any warning, e.g. django-vite's missing manifest.
    call_command("check", fail_level="WARNING")
