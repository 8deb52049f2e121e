"""Trellis designer: the Django project and app that stores, edits and runs workflows."""

from __future__ import annotations
