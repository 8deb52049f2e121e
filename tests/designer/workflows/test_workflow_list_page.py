"""The home page: the caller's workflows per team, htmx search, create, duplicate, import, export."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from designer.models import Workflow
from designer.workflows import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def listed(cast, workflow):
    services.create_workflow(actor=cast.editor, team=cast.team, name="Invoices", description="monthly billing")
    services.create_workflow(actor=cast.stranger, team=cast.other_team, name="Secret plan")
    return workflow


def test_home_lists_the_callers_workflows_by_team(cast, listed, client):
    client.force_login(cast.viewer)
    html = client.get(reverse("home")).content.decode()
    assert "<h1>Workflows</h1>" in html
    assert "Simple flow" in html and "Invoices" in html and "Secret plan" not in html
    assert reverse("api:workflow-export", args=[listed.pk]) in html
    assert reverse("editor", args=[listed.pk]) in html
    # Viewers get neither the create/import forms nor duplicate buttons.
    assert reverse("workflow-create") not in html and reverse("workflow-duplicate", args=[listed.pk]) not in html


def test_editors_get_create_import_and_duplicate(cast, listed, client):
    client.force_login(cast.editor)
    html = client.get(reverse("workflow-list")).content.decode()
    assert reverse("workflow-create") in html and reverse("workflow-import") in html
    assert reverse("workflow-duplicate", args=[listed.pk]) in html


def test_htmx_search_renders_only_the_results_partial(cast, listed, client):
    client.force_login(cast.viewer)
    response = client.get(reverse("workflow-list"), {"q": "billing"},
                          headers={"HX-Request": "true", "HX-Target": "workflow-results"})
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="workflow-results" data-count="1">')
    assert "Invoices" in html and "Simple flow" not in html and "<html" not in html
    none = client.get(reverse("workflow-list"), {"q": "zzz"},
                      headers={"HX-Request": "true", "HX-Target": "workflow-results"}).content.decode()
    assert "No workflows match" in none


def test_create_with_csrf_goes_to_the_editor(cast, client, password):
    browser = Client(enforce_csrf_checks=True)
    browser.login(username="eddie", password=password)
    browser.get(reverse("home"))
    token = browser.cookies["csrftoken"].value
    response = browser.post(reverse("workflow-create"),
                            {"team": cast.team.pk, "name": "From the page", "csrfmiddlewaretoken": token})
    workflow = Workflow.objects.get(name="From the page")
    assert response.status_code == 302 and response["Location"] == reverse("editor", args=[workflow.pk])
    assert browser.post(reverse("workflow-create"), {"team": cast.team.pk, "name": "No token"}).status_code == 403


def test_viewer_create_is_refused_with_a_message(cast, client):
    client.force_login(cast.viewer)
    response = client.post(reverse("workflow-create"), {"team": cast.team.pk, "name": "Nope"}, follow=True)
    assert "Could not create the workflow" in response.content.decode()
    assert not Workflow.objects.filter(name="Nope").exists()


def test_duplicate_from_the_page(cast, listed, client):
    client.force_login(cast.editor)
    response = client.post(reverse("workflow-duplicate", args=[listed.pk]), follow=True)
    assert "Copy of Simple flow" in response.content.decode()
    client.force_login(cast.stranger)
    assert client.post(reverse("workflow-duplicate", args=[listed.pk])).status_code == 404


def test_import_an_exported_file_and_refuse_garbage(cast, listed, client):
    client.force_login(cast.editor)
    exported = client.get(reverse("api:workflow-export", args=[listed.pk])).content
    upload = SimpleUploadedFile("simple-flow.json", exported, content_type="application/json")
    response = client.post(reverse("workflow-import"), {"team": cast.team.pk, "file": upload, "name": "Imported"},
                           follow=True)
    assert "Imported Imported." in response.content.decode()
    imported = Workflow.objects.get(name="Imported")
    assert imported.document["nodes"] == listed.document["nodes"]
    # Import opens the new workflow in the editor.
    assert response.redirect_chain[-1][0] == reverse("editor", args=[imported.pk])

    count = Workflow.objects.count()
    garbage = SimpleUploadedFile("bad.json", json.dumps({"nodes": "many"}).encode(), content_type="application/json")
    response = client.post(reverse("workflow-import"), {"team": cast.team.pk, "file": garbage}, follow=True)
    assert "Could not import bad.json" in response.content.decode()
    not_json = SimpleUploadedFile("x.json", b"\xff\xfe", content_type="application/json")
    response = client.post(reverse("workflow-import"), {"team": cast.team.pk, "file": not_json}, follow=True)
    assert "not JSON" in response.content.decode()
    assert Workflow.objects.count() == count
