"""Versions on the workflow's page: the publisher's note, comparing two versions (or the draft and one),
and restoring a version into the draft through the editor's write path, undoably."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.urls import reverse

from designer.models import Workflow
from designer.workflows import services as workflow_services

pytestmark = pytest.mark.django_db


def _edit(workflow: Any, actor: Any, change: Any) -> Any:
    document = copy.deepcopy(workflow.document)
    change(document)
    return workflow_services.save_document(actor=actor, workflow=workflow, revision=workflow.revision,
                                           document=document).workflow


def _two_versions(cast: Any, workflow: Any) -> Any:
    workflow_services.publish_workflow(actor=cast.editor, workflow=workflow, note="the first one")

    def change(document: dict[str, Any]) -> None:
        document["nodes"].append({"id": "ship", "kind": "task", "task": "assess_request",
                                  "input": [{"target": "amount", "path": "input.amount"}], "output": []})
        document["routes"].append({"source": "record", "label": "approved", "target": "ship"})
        document["nodes"][1]["input"][0]["value"] = False

    workflow = _edit(workflow, cast.editor, change)
    workflow_services.publish_workflow(actor=cast.editor, workflow=workflow, note="adds shipping")
    return workflow


def test_the_note_given_on_publish_is_listed_with_the_version(api: Any, client: Any, cast: Any, workflow: Any) -> None:
    response = api(cast.editor).post(reverse("api:workflow-publish", args=[workflow.pk]),
                                     {"note": "first cut <b>"}, format="json")
    assert response.status_code == 201 and response.json()["note"] == "first cut <b>"
    client.force_login(cast.editor)
    assert client.post(reverse("editor-publish", args=[workflow.pk]), {"note": "second"}).status_code == 204
    listed = api(cast.viewer).get(reverse("api:workflow-versions", args=[workflow.pk])).json()
    assert [(v["number"], v["note"]) for v in listed] == [(2, "second"), (1, "first cut <b>")]
    client.force_login(cast.viewer)
    page = client.get(reverse("workflow-page", args=[workflow.pk])).content.decode()
    assert "first cut &lt;b&gt;" in page and "<b>" not in page.split("first cut", 1)[1][:10]


def test_comparing_lists_each_change_and_marks_the_graph(client: Any, cast: Any, workflow: Any) -> None:
    _two_versions(cast, workflow)
    client.force_login(cast.viewer)
    response = client.get(reverse("version-compare", args=[workflow.pk]), {"a": "1", "b": "2"})
    assert response.status_code == 200
    found = {(c["what"], c["change"], c["key"]) for c in response.context["changes"]}
    assert found == {("node", "added", "ship"), ("input", "changed", "approved"),
                     ("route", "added", "record --approved")}
    marks = {node["id"]: node["mark"] for node in response.context["graph"]["nodes"]}
    assert marks == {"assess": "same", "record": "changed", "ship": "added"}
    approved = next(c for c in response.context["changes"] if c["key"] == "approved")
    assert approved["details"] == [{"field": "source", "before": "true", "after": "false"}]
    page = response.content.decode()
    assert '<td data-before><code>true</code></td>' in page and '<td data-after><code>false</code></td>' in page
    same = client.get(reverse("version-compare", args=[workflow.pk]), {"a": "2", "b": "draft"})
    assert same.context["changes"] == [] and "data-no-changes" in same.content.decode()
    assert client.get(reverse("version-compare", args=[workflow.pk]), {"a": "9", "b": "draft"}).status_code == 404


def test_restore_previews_what_the_draft_becomes_before_it_changes_anything(
    client: Any, cast: Any, workflow: Any
) -> None:
    workflow = _two_versions(cast, workflow)
    client.force_login(cast.editor)
    response = client.get(reverse("version-restore", args=[workflow.pk, 1]))
    assert response.status_code == 200
    assert Workflow.objects.get(pk=workflow.pk).revision == workflow.revision  # a preview saves nothing
    found = {(c["what"], c["change"], c["key"]): c["details"] for c in response.context["changes"]}
    # From the draft (= v2) back to v1: the shipping node goes, the literal goes back to true.
    assert found[("input", "changed", "approved")] == [{"field": "source", "before": "false", "after": "true"}]
    assert ("node", "removed", "ship") in found and ("route", "removed", "record --approved") in found
    assert {n["id"]: n["mark"] for n in response.context["graph"]["nodes"]}["ship"] == "removed"
    page = response.content.decode()
    assert "Restore v1 into the draft" in page and 'name="csrfmiddlewaretoken"' in page
    assert f'name="revision" value="{workflow.revision}"' in page
    client.force_login(cast.viewer)
    assert client.get(reverse("version-restore", args=[workflow.pk, 1])).status_code == 403
    client.force_login(cast.editor)
    assert client.get(reverse("version-restore", args=[workflow.pk, 9])).status_code == 404


def test_restore_makes_a_version_the_draft_and_can_be_undone(client: Any, cast: Any, workflow: Any) -> None:
    workflow = _two_versions(cast, workflow)
    before = copy.deepcopy(workflow.document)
    first = workflow.versions.get(number=1).document
    client.force_login(cast.editor)
    response = client.post(reverse("version-restore", args=[workflow.pk, 1]), {"revision": workflow.revision})
    assert response.status_code == 302
    restored = Workflow.objects.get(pk=workflow.pk)
    assert restored.document == first and restored.revision == workflow.revision + 1
    page = client.get(reverse("workflow-page", args=[workflow.pk])).content.decode()
    assert "Undo restore" in page
    assert client.post(reverse("version-restore-undo", args=[workflow.pk])).status_code == 302
    undone = Workflow.objects.get(pk=workflow.pk)
    assert undone.document == before and undone.revision == workflow.revision + 2


def test_a_restore_from_a_stale_page_is_refused_and_keeps_the_draft(client: Any, cast: Any, workflow: Any) -> None:
    workflow = _two_versions(cast, workflow)
    seen = workflow.revision
    workflow = _edit(workflow, cast.owner, lambda d: d.update(description="edited meanwhile"))
    client.force_login(cast.editor)
    response = client.post(reverse("version-restore", args=[workflow.pk, 1]), {"revision": seen}, follow=True)
    assert "Not restored" in response.content.decode()
    current = Workflow.objects.get(pk=workflow.pk)
    assert current.revision == workflow.revision and current.document["description"] == "edited meanwhile"


def test_undo_is_refused_once_the_draft_changed_again(client: Any, cast: Any, workflow: Any) -> None:
    workflow = _two_versions(cast, workflow)
    client.force_login(cast.editor)
    client.post(reverse("version-restore", args=[workflow.pk, 1]), {"revision": workflow.revision})
    restored = Workflow.objects.get(pk=workflow.pk)
    _edit(restored, cast.owner, lambda d: d.update(description="later"))
    response = client.post(reverse("version-restore-undo", args=[workflow.pk]), follow=True)
    assert "Not undone" in response.content.decode()
    assert Workflow.objects.get(pk=workflow.pk).document["description"] == "later"
