"""Django's SQLite backend, waiting for the write lock with short sleeps of its own (``base``)."""
