"""Server-rendered pages. One module per area; routes live in designer/views/urls.py."""

from __future__ import annotations
