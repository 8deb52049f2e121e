"""The team's secrets page (write-only: names and dates, never values)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from designer.secrets import views

urlpatterns: list[URLPattern | URLResolver] = [
    path("teams/<int:team_id>/secrets/", views.page, name="team-secrets"),
    path("teams/<int:team_id>/secrets/new/", views.create, name="team-secret-create"),
    path("teams/<int:team_id>/secrets/<str:name>/rotate/", views.rotate, name="team-secret-rotate"),
    path("teams/<int:team_id>/secrets/<str:name>/delete/", views.delete, name="team-secret-delete"),
]
