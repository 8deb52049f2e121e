"""Personal access tokens for the API: ``Authorization: Bearer <token>``.

A token acts as its user, narrowed by what it was created with: ``team`` (the user's other teams look
absent, 404, because ``TeamScopedQuerySet.for_user`` and ``permissions.role_of`` read the token) and
``read_only`` (writes refused with 403 ``token.read_only`` by ``TokenScopePermission``, and the user's
role counts as viewer at most). Tokens are looked up by their SHA-256; the token itself is never stored.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from designer.access.models import hash_secret
from designer.core.errors import TokenReadOnly
from designer.models import ApiToken

#: last_used_at is written at most this often per token, so a busy script does not write on every call.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class BearerTokenAuthentication(BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None  # not ours: the session (or nothing) decides
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                "the Authorization header must be 'Bearer <token>' with the token from your settings page"
            )
        try:
            secret = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("an API token is ASCII text") from None
        token = ApiToken.objects.select_related("user").filter(token_hash=hash_secret(secret)).first()
        now = timezone.now()
        if token is None or token.revoked_at is not None or token.expires_at <= now or not token.user.is_active:
            # One message for unknown, revoked and expired: a caller learns nothing about other people's tokens.
            raise exceptions.AuthenticationFailed(
                "this API token is not valid: it is unknown, revoked or expired; create a new one in Settings"
            )
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
        user = token.user
        user.trellis_api_token = token
        return user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class TokenScopePermission(BasePermission):
    """Refuses writes through a read-only token. Views that only read but take a body (POST validate) set
    ``read_only_safe = True``."""

    def has_permission(self, request: Request, view: Any) -> bool:
        token = request.auth if isinstance(request.auth, ApiToken) else None
        if token is None or not token.read_only or request.method in SAFE_METHODS:
            return True
        if getattr(view, "read_only_safe", False):
            return True
        raise TokenReadOnly(
            f"the API token {token.name!r} is read-only; use a token created without 'read-only' to change data"
        )


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "designer.access.api_auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A personal access token from Settings → API tokens, sent as "
                           "'Authorization: Bearer <token>'. It may be limited to one team and be read-only.",
        }
