"""Run pages: lists, the run's page and its parts, its actions and history (``designer/urls.py`` includes them)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from designer.runs import executions_views, graph_views, history_views, views

urlpatterns: list[URLPattern | URLResolver] = [
    path("runs/", views.run_list, name="run-list"),
    path("teams/<int:team_id>/runs/", views.team_runs, name="team-runs"),
    path("workflows/<int:workflow_id>/runs/", views.workflow_runs, name="workflow-runs"),
    path("workflows/<int:workflow_id>/run-panel/", views.run_panel, name="run-panel"),
    path("workflows/<int:workflow_id>/runs/start/", views.run_start, name="run-start"),
    path("runs/<int:run_id>/", views.run_detail, name="run-detail"),
    path("runs/<int:run_id>/events/", views.run_events, name="run-events"),
    path("runs/<int:run_id>/live/", views.run_live, name="run-live"),
    path("runs/<int:run_id>/timeline/", views.run_timeline, name="run-timeline"),
    path("runs/<int:run_id>/graph/", graph_views.run_graph, name="run-graph"),
    path("runs/<int:run_id>/frames/<str:frame_id>/", views.run_frame, name="run-frame"),
    path("runs/<int:run_id>/nodes/<str:node_id>/executions/", executions_views.run_node_executions,
         name="run-node-executions"),
    path("runs/<int:run_id>/resume/", views.run_resume, name="run-resume"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:run_id>/delete/", views.run_delete, name="run-delete"),
    path("runs/<int:run_id>/redrive/", history_views.run_redrive, name="run-redrive"),
    path("runs/<int:run_id>/rerun/", history_views.run_rerun, name="run-rerun"),
    path("runs/<int:run_id>/checkpoints/<int:step>/", history_views.run_checkpoint, name="run-checkpoint"),
    path("runs/<int:run_id>/checkpoints/<int:step>/fork/", history_views.run_fork, name="run-fork"),
]
