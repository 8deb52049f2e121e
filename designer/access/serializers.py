"""Teams, members, invitations and grants: request parsing and response shapes. No queries and no rules here:
those are the selectors' and services' job; a serializer only checks types and renders."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from designer.core.api_schema import RequestSerializer, StrictCharField
from designer.core.serializers import HAS_TEXT, StrictChoiceField, name_field
from designer.models import Invitation, Membership, Team, WorkflowGrant

ROLE_CHOICES = Membership.Role.choices


class TeamSerializer(serializers.ModelSerializer):
    role = serializers.CharField(read_only=True, help_text="the caller's role in this team")

    class Meta:
        model = Team
        fields: tuple[str, ...] = ("id", "name", "slug", "role")


class MemberSerializer(serializers.ModelSerializer):
    user_id = serializers.IntegerField(source="user.pk", read_only=True)
    username = serializers.CharField(source="user.username", read_only=True)
    email = serializers.CharField(source="user.email", read_only=True)

    class Meta:
        model = Membership
        fields = ("user_id", "username", "email", "role")


class TeamDetailSerializer(TeamSerializer):
    members = serializers.SerializerMethodField()

    class Meta(TeamSerializer.Meta):
        fields = (*TeamSerializer.Meta.fields, "members")

    def get_members(self, team: Team) -> list[dict[str, Any]]:
        return MemberSerializer(self.context["members"], many=True).data  # type: ignore[return-value]


class InvitationSerializer(serializers.ModelSerializer):
    """An invitation as its team's owners see it: what they typed, never which account (if any) it reached."""

    invited_by = serializers.CharField(source="invited_by.username", read_only=True, default=None)

    class Meta:
        model = Invitation
        fields = ("id", "invitee", "role", "status", "invited_by", "created_at", "expires_at")


class MyInvitationSerializer(serializers.ModelSerializer):
    """An invitation as its invitee sees it."""

    team = serializers.IntegerField(source="team_id", read_only=True)
    team_name = serializers.CharField(source="team.name", read_only=True)
    invited_by = serializers.CharField(source="invited_by.username", read_only=True, default=None)

    class Meta:
        model = Invitation
        fields = ("id", "team", "team_name", "role", "status", "invited_by", "created_at", "expires_at")


class TeamCreateSerializer(RequestSerializer):
    name = name_field(120)


class InviteSerializer(RequestSerializer):
    user = StrictCharField(
        max_length=254, min_length=1, validators=[HAS_TEXT],
        help_text="username or email of the person to invite; the answer is the same whether or not such an "
                  "account exists",
    )
    role = StrictChoiceField(choices=ROLE_CHOICES, default="viewer")


class MemberUpdateSerializer(RequestSerializer):
    role = StrictChoiceField(choices=ROLE_CHOICES)


class GrantSerializer(serializers.ModelSerializer):
    """A workflow shared with another team, as both sides see it."""

    workflow_name = serializers.CharField(source="workflow.name", read_only=True)
    owner_team = serializers.IntegerField(source="workflow.team_id", read_only=True)
    owner_team_slug = serializers.CharField(source="workflow.team.slug", read_only=True)
    team_name = serializers.CharField(source="team.name", read_only=True)
    team_slug = serializers.CharField(source="team.slug", read_only=True)
    subgraph_ref = serializers.SerializerMethodField(help_text="how the grantee team names it in a subgraph node")
    granted_by = serializers.CharField(source="granted_by.username", read_only=True, default=None)

    class Meta:
        model = WorkflowGrant
        fields = ("id", "workflow", "workflow_name", "owner_team", "owner_team_slug", "team", "team_name",
                  "team_slug", "role", "subgraph_ref", "granted_by", "created_at")

    def get_subgraph_ref(self, grant: WorkflowGrant) -> str:
        return f"{grant.workflow.team.slug}/{grant.workflow.slug}"
