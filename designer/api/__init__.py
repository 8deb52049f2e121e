"""The REST API under /api/ (contract: the OpenAPI schema at /api/schema/). Views parse, call, render."""

from __future__ import annotations
