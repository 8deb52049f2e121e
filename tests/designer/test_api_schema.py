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
