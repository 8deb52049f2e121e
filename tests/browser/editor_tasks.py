"""Tasks the editor tests add from the palette, on top of the site's catalogue.

Installed through the public setting, never by patching the catalogue::

    settings.TRELLIS_TASK_MODULES = [EDITOR_TASKS]   # pytest-django's ``settings`` fixture
"""

from __future__ import annotations

from typing import Any

from runtime.tasks import TaskRegistry

registry = TaskRegistry()


@registry.task(description="Pack one order line for a customer.")
def pack_item(customer: str, sku: str, qty: int = 1) -> dict[str, Any]:
    return {"label": f"{customer}: {qty} x {sku}"}
