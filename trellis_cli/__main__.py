from __future__ import annotations

from trellis_cli.commands import main

raise SystemExit(main())
