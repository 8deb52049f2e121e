"""Writes. Every function takes keyword-only arguments, starts with the caller
(``actor``), checks the caller's role through ``designer.permissions`` and runs
in one transaction, so the API, the pages, the admin actions and management
commands all share the same rules."""

from __future__ import annotations
