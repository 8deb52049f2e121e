"""Writes. Every function takes keyword-only arguments, starts with the caller
(``actor``) and checks the caller's role through ``designer.permissions``, so the
API, the pages, the admin actions and management commands all share the same
rules. Each write is atomic: most run in one transaction; the document save
analyses outside it and commits with a compare-and-set on the revision, so no
lock is held while the analyzer reads other workflows."""

from __future__ import annotations
