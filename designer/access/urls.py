"""Pages of teams, invitations and the user's API tokens (``designer/urls.py`` includes them)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from designer.access import account, views

urlpatterns: list[URLPattern | URLResolver] = [
    path("teams/", views.team_list, name="team-list"),
    path("teams/<int:team_id>/", views.team_detail, name="team-detail"),
    path("teams/<int:team_id>/members/", views.member_invite, name="team-member-add"),
    path("teams/<int:team_id>/invitations/<int:invitation_id>/revoke/", views.invitation_revoke,
         name="team-invitation-revoke"),
    path("invitations/<int:invitation_id>/accept/", views.invitation_answer, {"answer": "accept"},
         name="invitation-accept"),
    path("invitations/<int:invitation_id>/decline/", views.invitation_answer, {"answer": "decline"},
         name="invitation-decline"),
    path("invitations/<str:token>/", views.invitation_link, name="invitation-link"),
    path("teams/<int:team_id>/members/<int:user_id>/", views.member_update, name="team-member-update"),
    path("teams/<int:team_id>/members/<int:user_id>/remove/", views.member_remove, name="team-member-remove"),
    path("settings/tokens/", account.api_tokens, name="api-tokens"),
    path("settings/tokens/<int:token_id>/revoke/", account.api_token_revoke, name="api-token-revoke"),
]
