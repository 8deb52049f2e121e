"""The demo: example tasks (``workflow_tasks.py``), the demo team, accounts and workflows (``data.py``) and the
``load_demo`` command. Development settings (``designer.settings_dev``, which ``make run`` uses) and the test
settings install it; production settings (``designer.settings``) do not, so no deployment's task catalogue
holds the demo's fake tasks."""

from __future__ import annotations
