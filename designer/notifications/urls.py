"""The team's notifications page and the page an answer link opens."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver

from designer.core.routes import routes
from designer.notifications import views

urlpatterns: list[URLPattern | URLResolver] = [
    *routes("""
    teams/<int:team_id>/notifications/                       page       team-notifications
    teams/<int:team_id>/notifications/save/                  save       team-notifications-save
    teams/<int:team_id>/notifications/<int:rule_id>/test/    send_test  team-notifications-test
    teams/<int:team_id>/notifications/<int:rule_id>/delete/  delete     team-notifications-delete
    answer/<str:token>/                                      answer     answer-link
    """, views),
]
