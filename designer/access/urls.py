"""Pages of teams, invitations and the user's API tokens (``designer/urls.py`` includes them)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from designer.access import account, views
from designer.core.routes import routes

urlpatterns: list[URLPattern | URLResolver] = [
    *routes("""
    teams/                                                       team_list          team-list
    teams/<int:team_id>/                                         team_detail        team-detail
    teams/<int:team_id>/members/                                 member_invite      team-member-add
    teams/<int:team_id>/invitations/<int:invitation_id>/revoke/  invitation_revoke  team-invitation-revoke
    invitations/<str:token>/                                     invitation_link    invitation-link
    teams/<int:team_id>/members/<int:user_id>/                   member_update      team-member-update
    teams/<int:team_id>/members/<int:user_id>/remove/            member_remove      team-member-remove
    settings/tokens/                                             api_tokens         api-tokens
    settings/tokens/<int:token_id>/revoke/                       api_token_revoke   api-token-revoke
    """, account, views),
    path("invitations/<int:invitation_id>/accept/", views.invitation_answer, {"answer": "accept"},
         name="invitation-accept"),
    path("invitations/<int:invitation_id>/decline/", views.invitation_answer, {"answer": "decline"},
         name="invitation-decline"),
]
