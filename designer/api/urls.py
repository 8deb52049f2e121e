"""/api/ routes, namespace ``api`` (e.g. ``reverse("api:workflow-document", args=[pk])``).

The runs endpoints live in ``designer/api/runs.py`` (module-level ``urlpatterns``).
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path, re_path

from designer.api import views
from designer.api.schema import unknown_api_path

app_name = "api"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", views.ApiRootView.as_view(), name="root"),
    path("teams/", views.TeamListView.as_view(), name="team-list"),
    path("teams/<int:team_id>/", views.TeamDetailView.as_view(), name="team-detail"),
    path("teams/<int:team_id>/members/", views.TeamMembersView.as_view(), name="team-members"),
    path("teams/<int:team_id>/members/<int:user_id>/", views.TeamMemberView.as_view(), name="team-member"),
    path("teams/<int:team_id>/invitations/", views.TeamInvitationsView.as_view(), name="team-invitations"),
    path("teams/<int:team_id>/invitations/<int:invitation_id>/", views.TeamInvitationView.as_view(),
         name="team-invitation"),
    path("teams/<int:team_id>/shared/", views.TeamSharedView.as_view(), name="team-shared"),
    path("invitations/", views.MyInvitationsView.as_view(), name="invitation-list"),
    path("invitations/<int:invitation_id>/accept/", views.InvitationAcceptView.as_view(), name="invitation-accept"),
    path("invitations/<int:invitation_id>/decline/", views.InvitationDeclineView.as_view(),
         name="invitation-decline"),
    path("workflows/", views.WorkflowListView.as_view(), name="workflow-list"),
    path("workflows/import/", views.WorkflowImportView.as_view(), name="workflow-import"),
    path("workflows/<int:workflow_id>/", views.WorkflowDetailView.as_view(), name="workflow-detail"),
    path("workflows/<int:workflow_id>/duplicate/", views.WorkflowDuplicateView.as_view(), name="workflow-duplicate"),
    path("workflows/<int:workflow_id>/grants/", views.WorkflowGrantsView.as_view(), name="workflow-grants"),
    path("workflows/<int:workflow_id>/grants/<int:grant_id>/", views.WorkflowGrantView.as_view(),
         name="workflow-grant"),
    path("workflows/<int:workflow_id>/export/", views.WorkflowExportView.as_view(), name="workflow-export"),
    path("workflows/<int:workflow_id>/document/", views.WorkflowDocumentView.as_view(), name="workflow-document"),
    path("workflows/<int:workflow_id>/validate/", views.WorkflowValidateView.as_view(), name="workflow-validate"),
    path("workflows/<int:workflow_id>/analysis/", views.WorkflowAnalysisView.as_view(), name="workflow-analysis"),
    path("workflows/<int:workflow_id>/publish/", views.WorkflowPublishView.as_view(), name="workflow-publish"),
    path("workflows/<int:workflow_id>/versions/", views.WorkflowVersionListView.as_view(), name="workflow-versions"),
    path("workflows/<int:workflow_id>/versions/<int:number>/", views.WorkflowVersionDetailView.as_view(),
         name="workflow-version"),
    path("tasks/", views.TaskListView.as_view(), name="task-list"),
]

urlpatterns.append(path("", include("designer.api.runs")))
urlpatterns.append(path("", include("designer.api.run_history")))  # redrive, re-run, fork, checkpoints
# A node's executions in a run (designer/api/run_executions.py).
urlpatterns.append(path("", include("designer.api.run_executions")))

# A team's secrets (designer/secrets/api.py).
urlpatterns.append(path("", include("designer.secrets.api")))

# Triggers: webhooks and schedules (designer/triggers/api.py).
urlpatterns.append(path("", include("designer.triggers.api")))

# Last: anything else under /api/ is a JSON 404 (not Django's HTML page), whatever the method.
# [\s\S]: a path with a newline in it is an unknown path too, not a miss of every route (Django's HTML 404).
urlpatterns.append(re_path(r"^[\s\S]*\Z", unknown_api_path, name="unknown"))
