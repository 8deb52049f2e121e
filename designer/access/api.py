"""REST endpoints (contract: the OpenAPI schema at /api/schema/). Each view parses with a serializer, calls a
selector or a service, and renders; rules live in services, scoping in selectors."""

from __future__ import annotations

import sys
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from designer.access import invitations as invitation_services
from designer.access import selectors as team_selectors
from designer.access import serializers as s
from designer.access import teams as team_services
from designer.access.permissions import require_role
from designer.core.api import ERRORS, BaseAPIView, parse
from designer.core.routes import routes
from designer.core.serializers import ErrorSerializer


def _team_detail(request: Request, team_id: object) -> dict[str, Any]:
    team = team_selectors.get_team(user=request.user, team_id=team_id)
    members = team_selectors.members_of(team)
    return s.TeamDetailSerializer(team, context={"members": members}).data


class TeamListView(BaseAPIView):
    @extend_schema(responses={200: s.TeamSerializer(many=True)}, operation_id="teams_list")
    def get(self, request: Request) -> Response:
        return Response(s.TeamSerializer(team_selectors.teams_for(user=request.user), many=True).data)

    @extend_schema(request=s.TeamCreateSerializer, responses={201: s.TeamDetailSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = parse(s.TeamCreateSerializer, request.data)
        team = team_services.create_team(actor=request.user, name=data["name"])
        return Response(_team_detail(request, team.pk), status=status.HTTP_201_CREATED)


class TeamDetailView(BaseAPIView):
    @extend_schema(responses={200: s.TeamDetailSerializer, **ERRORS})
    def get(self, request: Request, team_id: int) -> Response:
        return Response(_team_detail(request, team_id))


class TeamMembersView(BaseAPIView):
    @extend_schema(responses={200: s.MemberSerializer(many=True), **ERRORS}, operation_id="teams_members_list")
    def get(self, request: Request, team_id: int) -> Response:
        team = team_selectors.get_team(user=request.user, team_id=team_id)
        return Response(s.MemberSerializer(team_selectors.members_of(team), many=True).data)


class TeamInvitationsView(BaseAPIView):
    @extend_schema(responses={200: s.InvitationSerializer(many=True), **ERRORS},
                   operation_id="teams_invitations_list", description="Pending invitations (owners only).")
    def get(self, request: Request, team_id: int) -> Response:
        team = team_selectors.get_team(user=request.user, team_id=team_id)
        require_role(request.user, team, "owner", what="this team")
        return Response(s.InvitationSerializer(team_selectors.pending_invitations_of(team), many=True).data)

    @extend_schema(
        request=s.InviteSerializer, responses={201: s.InvitationSerializer, **ERRORS, 429: ErrorSerializer},
        description="Invite someone (owners only). Nobody becomes a member until they accept. The answer is the "
                    "same whether or not the username or email belongs to an account. 429 (invitation.rate_limited, "
                    "with Retry-After) past the sender's invitations an hour (TRELLIS_INVITATIONS_PER_INVITER) or "
                    "the recipient's a day (TRELLIS_INVITATIONS_PER_ADDRESS).",
    )
    def post(self, request: Request, team_id: int) -> Response:
        team = team_selectors.get_team(user=request.user, team_id=team_id)
        data = parse(s.InviteSerializer, request.data)
        sent = invitation_services.invite(actor=request.user, team=team, user=data["user"], role=data["role"],
                                          site_url=request.build_absolute_uri("/"))
        return Response(s.InvitationSerializer(sent.invitation).data, status=status.HTTP_201_CREATED)


class TeamInvitationView(BaseAPIView):
    @extend_schema(responses={204: None, **ERRORS, 409: ErrorSerializer},
                   description="Revoke a pending invitation (owners only); its link stops working.")
    def delete(self, request: Request, team_id: int, invitation_id: int) -> Response:
        team = team_selectors.get_team(user=request.user, team_id=team_id)
        invitation_services.revoke_invitation(actor=request.user, team=team, invitation_id=invitation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamSharedView(BaseAPIView):
    @extend_schema(responses={200: s.GrantSerializer(many=True), **ERRORS}, operation_id="teams_shared_list",
                   description="Other teams' workflows shared with this team, with the granted role.")
    def get(self, request: Request, team_id: int) -> Response:
        team = team_selectors.get_team(user=request.user, team_id=team_id)
        return Response(s.GrantSerializer(team_selectors.shared_with(team), many=True).data)


class MyInvitationsView(BaseAPIView):
    @extend_schema(responses={200: s.MyInvitationSerializer(many=True)}, operation_id="invitations_list",
                   description="Open invitations addressed to you.")
    def get(self, request: Request) -> Response:
        return Response(s.MyInvitationSerializer(team_selectors.invitations_for(user=request.user), many=True).data)


class InvitationAcceptView(BaseAPIView):
    @extend_schema(request=None, responses={200: s.MemberSerializer, **ERRORS, 409: ErrorSerializer},
                   description="Join the team with the invited role.")
    def post(self, request: Request, invitation_id: int) -> Response:
        invitation = team_selectors.get_invitation_for(user=request.user, invitation_id=invitation_id)
        membership = invitation_services.accept_invitation(actor=request.user, invitation=invitation)
        return Response(s.MemberSerializer(membership).data)


class InvitationDeclineView(BaseAPIView):
    @extend_schema(request=None, responses={200: s.MyInvitationSerializer, **ERRORS, 409: ErrorSerializer})
    def post(self, request: Request, invitation_id: int) -> Response:
        invitation = team_selectors.get_invitation_for(user=request.user, invitation_id=invitation_id)
        declined = invitation_services.decline_invitation(actor=request.user, invitation=invitation)
        return Response(s.MyInvitationSerializer(declined).data)


class TeamMemberView(BaseAPIView):
    @extend_schema(request=s.MemberUpdateSerializer, responses={200: s.MemberSerializer, **ERRORS})
    def patch(self, request: Request, team_id: int, user_id: int) -> Response:
        team = team_selectors.get_team(user=request.user, team_id=team_id)
        data = parse(s.MemberUpdateSerializer, request.data)
        membership = team_services.change_member_role(actor=request.user, team=team, user_id=user_id,
                                                      role=data["role"])
        return Response(s.MemberSerializer(membership).data)

    @extend_schema(responses={204: None, **ERRORS})
    def delete(self, request: Request, team_id: int, user_id: int) -> Response:
        team = team_selectors.get_team(user=request.user, team_id=team_id)
        team_services.remove_member(actor=request.user, team=team, user_id=user_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


urlpatterns = routes("""
    teams/                                                TeamListView           team-list
    teams/<int:team_id>/                                  TeamDetailView         team-detail
    teams/<int:team_id>/members/                          TeamMembersView        team-members
    teams/<int:team_id>/members/<int:user_id>/            TeamMemberView         team-member
    teams/<int:team_id>/invitations/                      TeamInvitationsView    team-invitations
    teams/<int:team_id>/invitations/<int:invitation_id>/  TeamInvitationView     team-invitation
    teams/<int:team_id>/shared/                           TeamSharedView         team-shared
    invitations/                                          MyInvitationsView      invitation-list
    invitations/<int:invitation_id>/accept/               InvitationAcceptView   invitation-accept
    invitations/<int:invitation_id>/decline/              InvitationDeclineView  invitation-decline
""", sys.modules[__name__])
