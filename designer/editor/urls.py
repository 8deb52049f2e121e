"""The editor's pages: the canvas page, its htmx panels, the one write endpoint, the live feed and presence, the
run drawer and "try a node"."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver

from designer.core.routes import routes
from designer.editor import edits, live, run, trial, views

urlpatterns: list[URLPattern | URLResolver] = [
    *routes("""
    workflows/<int:workflow_id>/edit/                           editor          editor
    workflows/<int:workflow_id>/edit/palette/                   palette         editor-palette
    workflows/<int:workflow_id>/edit/inspector/                 inspector       editor-inspector
    workflows/<int:workflow_id>/edit/picker/                    picker          editor-picker
    workflows/<int:workflow_id>/edit/picker-options/            picker_options  editor-picker-options
    workflows/<int:workflow_id>/edit/data-tree/                 data_tree       editor-data-tree
    workflows/<int:workflow_id>/edit/diagnostics/               diagnostics     editor-diagnostics
    workflows/<int:workflow_id>/edit/change/                    edit            editor-edit
    workflows/<int:workflow_id>/edit/schema-builder/            schema_builder  editor-schema-builder
    workflows/<int:workflow_id>/edit/publish/                   publish         editor-publish
    workflows/<int:workflow_id>/edit/live/                      feed            editor-live
    workflows/<int:workflow_id>/edit/presence/                  announce        editor-presence
    workflows/<int:workflow_id>/edit/runs/                      runs            editor-runs
    workflows/<int:workflow_id>/edit/run-overlay/               overlay         editor-run-overlay
    workflows/<int:workflow_id>/edit/run-node/                  node            editor-run-node
    workflows/<int:workflow_id>/edit/try-node/                  form            editor-try-node
    workflows/<int:workflow_id>/edit/try-node/start/            start           editor-try-node-start
    workflows/<int:workflow_id>/edit/try-node/executions/       executions      editor-try-node-executions
    workflows/<int:workflow_id>/edit/try-node/<str:result_id>/  outcome         editor-try-node-outcome
    """, views, edits, live, run, trial),
]
