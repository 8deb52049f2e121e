"""The team's secrets page (write-only: names and dates, never values)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver

from designer.core.routes import routes
from designer.secrets import views

urlpatterns: list[URLPattern | URLResolver] = [
    *routes("""
    teams/<int:team_id>/secrets/                    page    team-secrets
    teams/<int:team_id>/secrets/new/                create  team-secret-create
    teams/<int:team_id>/secrets/<str:name>/rotate/  rotate  team-secret-rotate
    teams/<int:team_id>/secrets/<str:name>/delete/  delete  team-secret-delete
    """, views),
]
