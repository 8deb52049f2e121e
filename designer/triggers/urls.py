"""The workflow's page (versions, comparison, restore, its triggers) and the webhook's own URL."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver

from designer.core.routes import routes
from designer.triggers import workflow_page

urlpatterns: list[URLPattern | URLResolver] = [
    *routes("""
    workflows/<int:workflow_id>/                                   workflow_page         workflow-page
    workflows/<int:workflow_id>/versions/compare/                  version_compare       version-compare
    workflows/<int:workflow_id>/versions/<int:number>/restore/     version_restore       version-restore
    workflows/<int:workflow_id>/versions/restore/undo/             version_restore_undo  version-restore-undo
    workflows/<int:workflow_id>/webhooks/                          webhook_create        webhook-create
    workflows/<int:workflow_id>/webhooks/<int:webhook_id>/revoke/  webhook_revoke        webhook-revoke
    workflows/<int:workflow_id>/schedules/                         schedule_create       schedule-create
    workflows/<int:workflow_id>/schedules/<int:schedule_id>/       schedule_update       schedule-update
    hooks/<str:secret>/                                            webhook_call          webhook-call
    """, workflow_page),
]
