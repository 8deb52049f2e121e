from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_openapi_schema_describes_the_designer_endpoints(cast, api):
    response = api(cast.viewer).get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path in ("/api/teams/", "/api/workflows/", "/api/workflows/{workflow_id}/document/",
                 "/api/workflows/{workflow_id}/analysis/", "/api/workflows/{workflow_id}/publish/",
                 "/api/tasks/"):
        assert path in paths, path
    put = paths["/api/workflows/{workflow_id}/document/"]["put"]
    assert "409" in put["responses"]


def test_interactive_docs_use_local_assets(cast, api):
    response = api(cast.viewer).get(reverse("api-docs"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html
    assert "cdn" not in html.lower()


def test_a_kept_checkpoints_trace_seq_is_described_as_the_engines_counter_not_an_event_number(cast, api):
    """Its value is ``RunState.trace_seq``; a distributed foreach's stored event numbers run ahead of it, so a client
    must not page events with it."""
    schema = api(cast.viewer).get(reverse("api-schema"), {"format": "json"}).json()
    listed = schema["paths"]["/api/runs/{run_id}/checkpoints/"]["get"]["responses"]["200"]["content"]
    item = listed["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    checkpoint = schema["components"]["schemas"][item]["properties"]["checkpoints"]["items"]["$ref"].rsplit("/", 1)[-1]
    for name in (checkpoint, "CheckpointDetail"):
        described = schema["components"]["schemas"][name]["properties"]["trace_seq"]["description"]
        assert "engine's own trace counter" in described and "not an event `seq`" in described, name
