"""SQLite with writers that queue for their turn (``ENGINE = "designer.core.sqlite"``; see ``base``)."""
