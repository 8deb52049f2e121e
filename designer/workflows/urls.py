"""Pages of the workflow list (search, create, duplicate, import; "/" shows it too) and a workflow's sharing."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from designer.workflows import sharing, views

urlpatterns: list[URLPattern | URLResolver] = [
    path("workflows/", views.workflow_list, name="workflow-list"),
    path("workflows/new/", views.workflow_create, name="workflow-create"),
    path("workflows/import/", views.workflow_import, name="workflow-import"),
    path("workflows/<int:workflow_id>/duplicate/", views.workflow_duplicate, name="workflow-duplicate"),
    path("workflows/<int:workflow_id>/sharing/", sharing.workflow_sharing, name="workflow-sharing"),
    path("workflows/<int:workflow_id>/sharing/grants/", sharing.workflow_grant, name="workflow-grant"),
    path("workflows/<int:workflow_id>/sharing/grants/<int:grant_id>/revoke/", sharing.workflow_grant_revoke,
         name="workflow-grant-revoke"),
]
