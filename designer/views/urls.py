"""Page routes (server-rendered, htmx). Shared by the page helpers: add your block, keep the others."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from designer.notifications import views as notification_views
from designer.secrets import views as secret_views
from designer.views import run_executions, run_graph, run_history, runs, teams

urlpatterns: list[URLPattern | URLResolver] = []

# --- teams and sharing (designer/views/teams.py) ---
urlpatterns += [
    path("teams/", teams.team_list, name="team-list"),
    path("teams/<int:team_id>/", teams.team_detail, name="team-detail"),
    path("teams/<int:team_id>/members/", teams.member_invite, name="team-member-add"),
    path("teams/<int:team_id>/invitations/<int:invitation_id>/revoke/", teams.invitation_revoke,
         name="team-invitation-revoke"),
    path("invitations/<int:invitation_id>/accept/", teams.invitation_answer, {"answer": "accept"},
         name="invitation-accept"),
    path("invitations/<int:invitation_id>/decline/", teams.invitation_answer, {"answer": "decline"},
         name="invitation-decline"),
    path("invitations/<str:token>/", teams.invitation_link, name="invitation-link"),
    path("teams/<int:team_id>/members/<int:user_id>/", teams.member_update, name="team-member-update"),
    path("teams/<int:team_id>/members/<int:user_id>/remove/", teams.member_remove, name="team-member-remove"),
    path("workflows/<int:workflow_id>/sharing/", teams.workflow_sharing, name="workflow-sharing"),
    path("workflows/<int:workflow_id>/sharing/grants/", teams.workflow_grant, name="workflow-grant"),
    path("workflows/<int:workflow_id>/sharing/grants/<int:grant_id>/revoke/", teams.workflow_grant_revoke,
         name="workflow-grant-revoke"),
]

# --- the user's settings: API tokens (designer/views/account.py) ---
from designer.views import account  # noqa: E402

urlpatterns += [
    path("settings/tokens/", account.api_tokens, name="api-tokens"),
    path("settings/tokens/<int:token_id>/revoke/", account.api_token_revoke, name="api-token-revoke"),
]

# --- runs (designer/views/runs.py) ---
urlpatterns += [
    path("runs/", runs.run_list, name="run-list"),
    path("teams/<int:team_id>/runs/", runs.team_runs, name="team-runs"),
    path("teams/<int:team_id>/notifications/", notification_views.page, name="team-notifications"),
    path("teams/<int:team_id>/notifications/save/", notification_views.save, name="team-notifications-save"),
    path("teams/<int:team_id>/notifications/<int:rule_id>/test/", notification_views.send_test,
         name="team-notifications-test"),
    path("teams/<int:team_id>/notifications/<int:rule_id>/delete/", notification_views.delete,
         name="team-notifications-delete"),
    path("answer/<str:token>/", notification_views.answer, name="answer-link"),
    path("teams/<int:team_id>/secrets/", secret_views.page, name="team-secrets"),
    path("teams/<int:team_id>/secrets/new/", secret_views.create, name="team-secret-create"),
    path("teams/<int:team_id>/secrets/<str:name>/rotate/", secret_views.rotate, name="team-secret-rotate"),
    path("teams/<int:team_id>/secrets/<str:name>/delete/", secret_views.delete, name="team-secret-delete"),
    path("workflows/<int:workflow_id>/runs/", runs.workflow_runs, name="workflow-runs"),
    path("workflows/<int:workflow_id>/run-panel/", runs.run_panel, name="run-panel"),
    path("workflows/<int:workflow_id>/runs/start/", runs.run_start, name="run-start"),
    path("runs/<int:run_id>/", runs.run_detail, name="run-detail"),
    path("runs/<int:run_id>/events/", runs.run_events, name="run-events"),
    path("runs/<int:run_id>/live/", runs.run_live, name="run-live"),
    path("runs/<int:run_id>/timeline/", runs.run_timeline, name="run-timeline"),
    path("runs/<int:run_id>/graph/", run_graph.run_graph, name="run-graph"),
    path("runs/<int:run_id>/frames/<str:frame_id>/", runs.run_frame, name="run-frame"),
    path("runs/<int:run_id>/nodes/<str:node_id>/executions/", run_executions.run_node_executions,
         name="run-node-executions"),
    path("runs/<int:run_id>/resume/", runs.run_resume, name="run-resume"),
    path("runs/<int:run_id>/cancel/", runs.run_cancel, name="run-cancel"),
    path("runs/<int:run_id>/delete/", runs.run_delete, name="run-delete"),
    path("runs/<int:run_id>/redrive/", run_history.run_redrive, name="run-redrive"),
    path("runs/<int:run_id>/rerun/", run_history.run_rerun, name="run-rerun"),
    path("runs/<int:run_id>/checkpoints/<int:step>/", run_history.run_checkpoint, name="run-checkpoint"),
    path("runs/<int:run_id>/checkpoints/<int:step>/fork/", run_history.run_fork, name="run-fork"),
]

# --- workflow editor (designer/editor/) ---
from designer.editor import edits as editor_edits  # noqa: E402
from designer.editor import live as editor_live  # noqa: E402
from designer.editor import run as editor_run  # noqa: E402
from designer.editor import views as editor  # noqa: E402

urlpatterns += [
    path("workflows/<int:workflow_id>/edit/", editor.editor, name="editor"),
    path("workflows/<int:workflow_id>/edit/palette/", editor.palette, name="editor-palette"),
    path("workflows/<int:workflow_id>/edit/inspector/", editor.inspector, name="editor-inspector"),
    path("workflows/<int:workflow_id>/edit/picker/", editor.picker, name="editor-picker"),
    path("workflows/<int:workflow_id>/edit/diagnostics/", editor.diagnostics, name="editor-diagnostics"),
    path("workflows/<int:workflow_id>/edit/change/", editor_edits.edit, name="editor-edit"),
    path("workflows/<int:workflow_id>/edit/schema-builder/", editor.schema_builder, name="editor-schema-builder"),
    path("workflows/<int:workflow_id>/edit/publish/", editor.publish, name="editor-publish"),
    path("workflows/<int:workflow_id>/edit/runs/", editor_run.runs, name="editor-runs"),
    path("workflows/<int:workflow_id>/edit/run-overlay/", editor_run.overlay, name="editor-run-overlay"),
    path("workflows/<int:workflow_id>/edit/run-node/", editor_run.node, name="editor-run-node"),
    path("workflows/<int:workflow_id>/edit/live/", editor_live.feed, name="editor-live"),
    path("workflows/<int:workflow_id>/edit/presence/", editor_live.announce, name="editor-presence"),
]

# --- workflow list: search, create, duplicate, import (designer/views/workflows.py); "/" (home) shows it too ---
from designer.views import workflows  # noqa: E402

urlpatterns += [
    path("workflows/", workflows.workflow_list, name="workflow-list"),
    path("workflows/new/", workflows.workflow_create, name="workflow-create"),
    path("workflows/import/", workflows.workflow_import, name="workflow-import"),
    path("workflows/<int:workflow_id>/duplicate/", workflows.workflow_duplicate, name="workflow-duplicate"),
]

# --- the workflow's page: versions, comparison, restore, triggers (designer/views/workflow_page.py) ---
from designer.views import workflow_page  # noqa: E402

urlpatterns += [
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

# --- "Try this node" in the inspector (designer/editor/trial.py) ---
from designer.editor import trial as editor_try  # noqa: E402

urlpatterns += [
    path("workflows/<int:workflow_id>/edit/try-node/", editor_try.form, name="editor-try-node"),
    path("workflows/<int:workflow_id>/edit/try-node/start/", editor_try.start, name="editor-try-node-start"),
    path("workflows/<int:workflow_id>/edit/try-node/executions/", editor_try.executions,
         name="editor-try-node-executions"),
    path("workflows/<int:workflow_id>/edit/try-node/<str:result_id>/", editor_try.outcome,
         name="editor-try-node-outcome"),
]
