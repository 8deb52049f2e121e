"""Run every bench/bench_*.py module's main(), or only those named on the command line.

python -m bench                 # all
python -m bench bench_engine    # one (with or without the bench_ prefix)
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

from bench import _headline


def discover() -> list[str]:
    here = Path(__file__).parent
    return sorted(info.name for info in pkgutil.iter_modules([str(here)]) if info.name.startswith("bench_"))


def main(argv: list[str]) -> int:
    available = discover()
    wanted = [name if name.startswith("bench_") else f"bench_{name}" for name in argv] or available
    unknown = sorted(set(wanted) - set(available))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(available)}")
        return 2
    if not wanted:
        print("no benchmarks yet (add bench/bench_<name>.py with a main() function)")
        return 0
    for name in wanted:
        print(f"=== {name}", flush=True)
        module = importlib.import_module(f"bench.{name}")
        result = module.main()
        if isinstance(result, int) and result != 0:
            print(f"{name} failed with status {result}")
            return result
    _headline.print_summary()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
