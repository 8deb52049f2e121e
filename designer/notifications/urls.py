"""The team's notifications page and the page an answer link opens."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from designer.notifications import views

urlpatterns: list[URLPattern | URLResolver] = [
    path("teams/<int:team_id>/notifications/", views.page, name="team-notifications"),
    path("teams/<int:team_id>/notifications/save/", views.save, name="team-notifications-save"),
    path("teams/<int:team_id>/notifications/<int:rule_id>/test/", views.send_test, name="team-notifications-test"),
    path("teams/<int:team_id>/notifications/<int:rule_id>/delete/", views.delete, name="team-notifications-delete"),
    path("answer/<str:token>/", views.answer, name="answer-link"),
]
