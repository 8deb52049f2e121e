"""Imported once by the step pool's forkserver (never by the worker itself): set Django up there, so every step
process forked from it starts with the apps loaded and the task modules imported."""

from __future__ import annotations

import os

if os.environ.get("DJANGO_SETTINGS_MODULE"):
    import django

    django.setup()
    import designer.runs.step_process  # noqa: F401 - the children's entry point, loaded before they fork
