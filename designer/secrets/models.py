"""A team's secrets and where they were used. Both name their team and run by label, so this module imports
nothing of ``designer.models`` (no import cycle)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models

from designer.access.models import TeamScoped


class Secret(TeamScoped):
    """One named secret of a team: its value encrypted (``designer.secrets.crypto``), never shown again."""

    team = models.ForeignKey("designer.Team", on_delete=models.CASCADE, related_name="secrets")
    name = models.CharField(max_length=64)
    ciphertext = models.TextField()
    description = models.CharField(max_length=200, blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name",)
        constraints = [models.UniqueConstraint(fields=("team", "name"), name="secret_unique_team_name")]

    def __str__(self) -> str:
        return f"secret {self.name} of team {self.team_id}"


class SecretUse(TeamScoped):
    """A step that was given a secret's value: which run, which node, when."""

    team_lookup: ClassVar[str] = "run__team"

    run = models.ForeignKey("designer.Run", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=64)
    node_id = models.CharField(max_length=200)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=("run", "at"), name="secretuse_run_at")]

    def __str__(self) -> str:
        return f"run {self.run_id} used secret {self.name} at node {self.node_id}"
