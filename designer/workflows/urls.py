"""Pages of the workflow list (search, create, duplicate, import; "/" shows it too) and a workflow's sharing."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver

from designer.core.routes import routes
from designer.workflows import sharing, views

urlpatterns: list[URLPattern | URLResolver] = [
    *routes("""
    workflows/                                                         workflow_list          workflow-list
    workflows/new/                                                     workflow_create        workflow-create
    workflows/import/                                                  workflow_import        workflow-import
    workflows/<int:workflow_id>/duplicate/                             workflow_duplicate     workflow-duplicate
    workflows/<int:workflow_id>/sharing/                               workflow_sharing       workflow-sharing
    workflows/<int:workflow_id>/sharing/grants/                        workflow_grant         workflow-grant
    workflows/<int:workflow_id>/sharing/grants/<int:grant_id>/revoke/  workflow_grant_revoke  workflow-grant-revoke
    """, sharing, views),
]
