"""Writes: create, rotate (a new value) and delete a team's secrets (owners and editors); keyword-only, atomic.
A value goes in and is never given back: only ``reveal_for_run`` decrypts, for a worker's step."""

from __future__ import annotations

from typing import Any, Final

from django.db import IntegrityError, transaction

from designer.access.permissions import require_role
from designer.core.errors import BadRequest, SecretExists
from designer.secrets import crypto
from designer.secrets.models import Secret, SecretUse
from runtime.secrets import SECRET_NAME, SecretNotFoundError

MAX_VALUE_CHARS: Final = 10_000
_NAME_HELP: Final = "a letter or _, then letters, digits or _ (at most 64), e.g. billing_api_key"


def _name(value: object) -> str:
    if not isinstance(value, str) or not SECRET_NAME.fullmatch(value.strip()):
        raise BadRequest(f"a secret's name is {_NAME_HELP}; got {str(value)[:70]!r}", field="name")
    return value.strip()


def _value(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest("give the secret's value (it is stored encrypted and never shown again)", field="value")
    if len(value) > MAX_VALUE_CHARS or "\x00" in value:
        raise BadRequest(f"a secret's value has at most {MAX_VALUE_CHARS:,} characters and no NUL", field="value")
    return value


def _description(value: object) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if len(text) > 200 or "\x00" in text:
        raise BadRequest("a description has at most 200 characters and no NUL", field="description")
    return text


@transaction.atomic
def create_secret(*, actor: Any, team: Any, name: object, value: object, description: object = "") -> Secret:
    require_role(actor, team, "editor", what="this team")
    clean = _name(name)
    try:
        with transaction.atomic():
            return Secret.objects.create(team_id=getattr(team, "pk", team), name=clean,
                                         ciphertext=crypto.encrypt(_value(value)),
                                         description=_description(description), created_by=actor, updated_by=actor)
    except IntegrityError:
        raise SecretExists(f"the team already has a secret named {clean!r}: give it a new value (rotate) or "
                           "choose another name", field="name") from None


@transaction.atomic
def rotate_secret(*, actor: Any, secret: Secret, value: object) -> Secret:
    """A new value for ``secret``: runs started from now on use it."""
    require_role(actor, secret.team_id, "editor", what="this team")
    secret.ciphertext = crypto.encrypt(_value(value))
    secret.updated_by = actor
    secret.save(update_fields=["ciphertext", "updated_by", "updated_at"])
    return secret


@transaction.atomic
def delete_secret(*, actor: Any, secret: Secret) -> None:
    require_role(actor, secret.team_id, "editor", what="this team")
    secret.delete()


def rotate_keys() -> int:
    """Re-encrypt every secret with the first key of ``TRELLIS_SECRET_KEYS``; returns how many."""
    count = 0
    for secret in Secret.objects.select_for_update().iterator():
        with transaction.atomic():
            Secret.objects.filter(pk=secret.pk).update(ciphertext=crypto.rotate(secret.ciphertext))
            count += 1
    return count


class TeamSecrets:
    """The ``runtime.secrets.SecretResolver`` a worker gives the engine for one run: the run's team's secrets,
    decrypted when a step needs one, each use recorded (run, node, time)."""

    def __init__(self, *, team_id: int, run_id: int) -> None:
        self.team_id, self.run_id = team_id, run_id

    def reveal(self, name: str, *, node_id: str) -> str:
        token = Secret.objects.filter(team_id=self.team_id, name=name).values_list("ciphertext", flat=True).first()
        if token is None:
            raise SecretNotFoundError(
                f"node {node_id!r} uses secret {name!r}, which its team does not have (deleted since the workflow "
                "was saved?): add it on the team's Secrets page and redrive the run", node_id=node_id, secret=name)
        value = crypto.decrypt(token)
        SecretUse.objects.create(run_id=self.run_id, name=name, node_id=node_id)
        return value
