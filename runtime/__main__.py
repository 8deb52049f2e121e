"""``python -m runtime``: see ``runtime._cli``."""

from __future__ import annotations

import sys

from runtime._cli import main

if __name__ == "__main__":
    sys.exit(main())
