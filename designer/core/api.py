"""REST endpoints (contract: the OpenAPI schema at /api/schema/). Each view parses with a serializer, calls a
selector or a service, and renders; rules live in services, scoping in selectors."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from designer.core import serializers as s
from designer.core.parsers import LimitedJSONParser


def parse(serializer_class: type[s.serializers.Serializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class BaseAPIView(APIView):
    parser_classes = [LimitedJSONParser]


class ApiRootView(BaseAPIView):
    """``/api/``: where the collections are (the browsable API's breadcrumbs link here; it was a 404)."""

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        return Response({name: request.build_absolute_uri(reverse(url_name)) for name, url_name in API_ROOT.items()})


ERRORS = {400: s.ErrorSerializer, 403: s.ErrorSerializer, 404: s.ErrorSerializer}


API_ROOT = {"teams": "api:team-list", "workflows": "api:workflow-list", "runs": "api:run-list",
            "tasks": "api:task-list", "invitations": "api:invitation-list", "schema": "api-schema", "docs": "api-docs"}
