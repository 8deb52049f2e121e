"""What every domain shares: the error hierarchy, reading untrusted input, JSON as people read it, and the page and
API plumbing (htmx typing, error pages and the API's error handler, parsers, list filters, serializer fields).

It imports no domain package, so every domain may import it (``tests/test_import_contracts.py``)."""

from __future__ import annotations
