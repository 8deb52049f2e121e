"""Workflows and their versions: documents, the edit operations on them, diffs, the schema builder, and the
services and selectors that save, publish and read them."""
