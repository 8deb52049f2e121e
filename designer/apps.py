from __future__ import annotations

from django.apps import AppConfig


class DesignerConfig(AppConfig):
    name = "designer"
    verbose_name = "Trellis designer"
    default_auto_field = "django.db.models.BigAutoField"
