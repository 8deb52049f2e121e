from __future__ import annotations

import pytest
from django.urls import reverse

from designer.workflows import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_for(client, make_user):
    admin = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    return client


def test_admin_pages_for_teams_workflows_and_versions_render(admin_client_for, cast, workflow):
    version = services.publish_workflow(actor=cast.owner, workflow=workflow)
    pages = [
        reverse("admin:designer_team_changelist"),
        reverse("admin:designer_team_change", args=[cast.team.pk]),
        reverse("admin:designer_workflow_changelist"),
        reverse("admin:designer_workflow_change", args=[workflow.pk]),
        reverse("admin:designer_workflowversion_changelist"),
        reverse("admin:designer_workflowversion_change", args=[version.pk]),
    ]
    for page in pages:
        response = admin_client_for.get(page)
        assert response.status_code == 200, page
    change = admin_client_for.get(reverse("admin:designer_workflow_change", args=[workflow.pk])).content.decode()
    assert "olivia" in admin_client_for.get(pages[1]).content.decode()  # membership inline
    assert "assess_request" in change  # the document, read-only
    assert admin_client_for.get(reverse("admin:designer_workflow_add")).status_code == 403


def test_published_versions_are_shown_but_never_added_or_changed_in_the_admin(admin_client_for, cast, workflow):
    version = services.publish_workflow(actor=cast.owner, workflow=workflow)
    change_url = reverse("admin:designer_workflowversion_change", args=[version.pk])
    page = admin_client_for.get(change_url).content.decode()
    assert "assess_request" in page and "<label>Document:</label>" in page  # the document, pretty-printed
    assert 'name="_save"' not in page
    assert admin_client_for.get(reverse("admin:designer_workflowversion_add")).status_code == 403
    assert admin_client_for.post(change_url, {"number": 7}).status_code == 403
