from __future__ import annotations

from django.apps import AppConfig


class DesignerConfig(AppConfig):
    name = "designer"
    verbose_name = "Trellis designer"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every TRELLIS_* setting is checked now, so a bad value stops start-up naming the setting.
        # Like admin.py: import every installed app's workflow_tasks.py now, so a
        # broken task module fails at start-up, not on the first request.
        from designer import (
            conf,
            tasks,  # noqa: F401 - wires the task objects into designer.runs.dispatch
        )
        from designer.notifications import receivers as notification_receivers  # noqa: F401 - connects them
        from designer.secrets import checks  # noqa: F401 - registers the deploy check
        from designer.triggers import receivers as trigger_receivers  # noqa: F401 - connects them
        from designer.workflows import catalog

        conf.check_all()
        catalog.autodiscover()
