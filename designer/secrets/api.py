"""A team's secrets over the API: members list them (names and dates, never values); owners and editors create,
rotate and delete them. A value is write-only: no answer carries it, whatever the caller's role."""

from __future__ import annotations

import sys

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from designer.core.api import BaseAPIView, parse
from designer.core.api_schema import RequestSerializer, StrictCharField
from designer.core.errors import ObjectNotFound
from designer.core.routes import routes
from designer.core.serializers import ErrorSerializer
from designer.models import Team
from designer.secrets import selectors
from designer.secrets import services as secret_services
from designer.secrets.services import MAX_VALUE_CHARS
from runtime.secrets import SECRET_NAME

ERRORS = {400: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer}
NO_NUL_VALUE = RegexValidator(r"^[^\x00]+$", "a value is text without NUL characters")
NO_NUL_TEXT = RegexValidator(r"^[^\x00]*$", "no NUL characters")


class SecretSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="what a binding names (`\"secret\": \"<name>\"`)")
    description = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField(help_text="when its value was last set")
    updated_by = serializers.CharField(source="updated_by.username", default=None, allow_null=True)
    last_used_at = serializers.DateTimeField(allow_null=True, help_text="when a run's step last used it")


class SecretCreateSerializer(RequestSerializer):
    name = StrictCharField(max_length=64, help_text="a letter or _, then letters, digits or _",
                           validators=[RegexValidator(SECRET_NAME.pattern, "a letter or _, then letters, digits or _ "
                                                                           "(at most 64)")])
    value = StrictCharField(max_length=MAX_VALUE_CHARS, write_only=True, trim_whitespace=False,
                            validators=[NO_NUL_VALUE], help_text="stored encrypted; never returned")
    description = StrictCharField(required=False, allow_blank=True, max_length=200, default="",
                                  validators=[NO_NUL_TEXT])


class SecretRotateSerializer(RequestSerializer):
    value = StrictCharField(max_length=MAX_VALUE_CHARS, write_only=True, trim_whitespace=False,
                            validators=[NO_NUL_VALUE], help_text="the new value; runs started from now on use it")


def _team(request: Request, team_id: int) -> int:
    if not Team.objects.for_user(request.user).filter(pk=team_id).exists():
        raise ObjectNotFound("this team does not exist or you are not in it")
    return team_id


class SecretListView(BaseAPIView):
    @extend_schema(responses={200: SecretSerializer(many=True), **ERRORS}, operation_id="teams_secrets_list")
    def get(self, request: Request, team_id: int) -> Response:
        team = _team(request, team_id)
        return Response(SecretSerializer(selectors.secrets_of(user=request.user, team_id=team), many=True).data)

    @extend_schema(request=SecretCreateSerializer, responses={201: SecretSerializer, 409: ErrorSerializer, **ERRORS},
                   description="Create a secret (owner or editor). The value is stored encrypted and never shown.")
    def post(self, request: Request, team_id: int) -> Response:
        team = _team(request, team_id)
        data = parse(SecretCreateSerializer, request.data)
        created = secret_services.create_secret(actor=request.user, team=team, **data)
        shown = selectors.get_secret(user=request.user, team_id=team, name=created.name)
        return Response(SecretSerializer(shown).data, status=status.HTTP_201_CREATED)


class SecretDetailView(BaseAPIView):
    @extend_schema(request=SecretRotateSerializer, responses={200: SecretSerializer, **ERRORS},
                   description="Rotate: give the secret a new value (owner or editor).")
    def put(self, request: Request, team_id: int, name: str) -> Response:
        team = _team(request, team_id)
        secret = selectors.get_secret(user=request.user, team_id=team, name=name)
        data = parse(SecretRotateSerializer, request.data)
        secret_services.rotate_secret(actor=request.user, secret=secret, value=data["value"])
        return Response(SecretSerializer(selectors.get_secret(user=request.user, team_id=team, name=name)).data)

    @extend_schema(responses={204: None, **ERRORS})
    def delete(self, request: Request, team_id: int, name: str) -> Response:
        team = _team(request, team_id)
        secret = selectors.get_secret(user=request.user, team_id=team, name=name)
        secret_services.delete_secret(actor=request.user, secret=secret)
        return Response(status=status.HTTP_204_NO_CONTENT)


urlpatterns = routes("""
    teams/<int:team_id>/secrets/             SecretListView    team-secrets
    teams/<int:team_id>/secrets/<str:name>/  SecretDetailView  team-secret
""", sys.modules[__name__])
