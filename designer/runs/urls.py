"""Run pages: lists, the run's page and its parts, its actions and history (``designer/urls.py`` includes them)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver

from designer.core.routes import routes
from designer.runs import executions_views, graph_views, history_views, views

urlpatterns: list[URLPattern | URLResolver] = [
    *routes("""
    runs/                                              run_list             run-list
    teams/<int:team_id>/runs/                          team_runs            team-runs
    workflows/<int:workflow_id>/runs/                  workflow_runs        workflow-runs
    workflows/<int:workflow_id>/run-panel/             run_panel            run-panel
    workflows/<int:workflow_id>/runs/start/            run_start            run-start
    runs/<int:run_id>/                                 run_detail           run-detail
    runs/<int:run_id>/events/                          run_events           run-events
    runs/<int:run_id>/live/                            run_live             run-live
    runs/<int:run_id>/timeline/                        run_timeline         run-timeline
    runs/<int:run_id>/graph/                           run_graph            run-graph
    runs/<int:run_id>/frames/<str:frame_id>/           run_frame            run-frame
    runs/<int:run_id>/nodes/<str:node_id>/executions/  run_node_executions  run-node-executions
    runs/<int:run_id>/resume/                          run_resume           run-resume
    runs/<int:run_id>/cancel/                          run_cancel           run-cancel
    runs/<int:run_id>/delete/                          run_delete           run-delete
    runs/<int:run_id>/redrive/                         run_redrive          run-redrive
    runs/<int:run_id>/rerun/                           run_rerun            run-rerun
    runs/<int:run_id>/checkpoints/<int:step>/          run_checkpoint       run-checkpoint
    runs/<int:run_id>/checkpoints/<int:step>/fork/     run_fork             run-fork
    """, views, graph_views, executions_views, history_views),
]
