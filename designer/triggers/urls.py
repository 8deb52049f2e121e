"""The workflow's page (versions, comparison, restore, its triggers) and the webhook's own URL."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from designer.triggers import workflow_page

urlpatterns: list[URLPattern | URLResolver] = [
    path("workflows/<int:workflow_id>/", workflow_page.workflow_page, name="workflow-page"),
    path("workflows/<int:workflow_id>/versions/compare/", workflow_page.version_compare, name="version-compare"),
    path("workflows/<int:workflow_id>/versions/<int:number>/restore/", workflow_page.version_restore,
         name="version-restore"),
    path("workflows/<int:workflow_id>/versions/restore/undo/", workflow_page.version_restore_undo,
         name="version-restore-undo"),
    path("workflows/<int:workflow_id>/webhooks/", workflow_page.webhook_create, name="webhook-create"),
    path("workflows/<int:workflow_id>/webhooks/<int:webhook_id>/revoke/", workflow_page.webhook_revoke,
         name="webhook-revoke"),
    path("workflows/<int:workflow_id>/schedules/", workflow_page.schedule_create, name="schedule-create"),
    path("workflows/<int:workflow_id>/schedules/<int:schedule_id>/", workflow_page.schedule_update,
         name="schedule-update"),
    path("hooks/<str:secret>/", workflow_page.webhook_call, name="webhook-call"),
]
