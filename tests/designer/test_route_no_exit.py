"""A route cycle with no exit is reported when the draft is saved, with its nodes as data for the editor."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.urls import reverse

from designer.models import Run

pytestmark = pytest.mark.django_db


def test_the_api_carries_the_cycle_and_refuses_to_start_it(api: Any, cast: Any, workflow: Any,
                                                           document: dict[str, Any]) -> None:
    looped = copy.deepcopy(document)
    # assess routes both its labels to record, and record's both labels back: no way out.
    looped["routes"] += [{"source": "record", "label": "approved", "target": "assess"},
                         {"source": "record", "label": "rejected", "target": "assess"}]

    saved = api(cast.editor).put(reverse("api:workflow-document", args=[workflow.pk]),
                                 {"revision": workflow.revision, "document": looped}, format="json")

    assert saved.status_code == 200
    [problem] = [d for d in saved.json()["diagnostics"] if d["code"] == "route.no_exit"]
    assert problem["node_id"] == "assess" and problem["data"] == {"nodes": ["assess", "record"]}
    assert all(d["data"] == {} for d in saved.json()["diagnostics"] if d["code"] != "route.no_exit")
    started = api(cast.editor).post(reverse("api:workflow-runs", args=[workflow.pk]),
                                    {"input": {"amount": 5}, "version": "draft"}, format="json")
    assert started.status_code == 400 and started.json()["code"] == "workflow.invalid"
    assert not Run.objects.exists()
