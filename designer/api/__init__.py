"""The REST API under /api/ (contract: API.md). Views parse, call services/selectors, render."""

from __future__ import annotations
