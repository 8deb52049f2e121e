"""The schema budget (issue 12): measuring a schema's expanded size vs. validating one value against it.

The peer is jsonschema itself: plain ``Draft202012Validator(schema).iter_errors(value)`` on the ``$defs``
bomb d(i) = allOf [d(i-1), d(i-1)]. The bomb's validation time doubles per level; ``schema_defects``
(meta-schema check, $ref walk, expanded-size count, recursion fan-out) stays linear in the schema's text
and refuses every level from 11 up. Validation of the deeper levels is skipped (it would take minutes).
Timings are medians, printed, never asserted.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from jsonschema import Draft202012Validator

from runtime._schema_check import DEFAULT_DIALECT, MAX_SCHEMA_SUBSCHEMAS, _cached_defects, _Walk, schema_defects

LEVELS = (8, 10, 12, 14, 19, 60, 200)
VALIDATE_UP_TO = 14


def bomb(levels: int) -> dict[str, Any]:
    defs: dict[str, Any] = {"d0": {"type": "integer"}}
    for i in range(1, levels + 1):
        defs[f"d{i}"] = {"allOf": [{"$ref": f"#/$defs/d{i - 1}"}, {"$ref": f"#/$defs/d{i - 1}"}]}
    return {"$defs": defs, "type": "object", "properties": {"x": {"$ref": f"#/$defs/d{levels}"}}}


def _median(run: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        _cached_defects.cache_clear()
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    headers = ["levels", "expanded size", "refused", "schema check (ms)", "jsonschema validate (ms)"]
    rows = []
    for levels in LEVELS:
        schema = bomb(levels)
        walk = _Walk(DEFAULT_DIALECT, schema)
        walk.defects(limit=10**18)
        size = walk.expanded_size(10**18)
        check = _median(lambda schema=schema: schema_defects(schema))
        refused = any(d.kind == "too_complex" for d in schema_defects(schema))
        if levels <= VALIDATE_UP_TO:
            validator = Draft202012Validator(schema)
            validate = f"{_median(lambda v=validator: list(v.iter_errors({'x': 1})), 1) * 1e3:,.1f}"
        else:
            validate = "(skipped)"
        rows.append([str(levels), f"{size:,}" if size < 10**15 else f"~2^{size.bit_length() - 1}",
                     "yes" if refused else "no", f"{check * 1e3:,.2f}", validate])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print()
    print(f"$defs bomb: schema_defects (budget {MAX_SCHEMA_SUBSCHEMAS:,} subschemas) vs jsonschema "
          f"validating {{'x': 1}}")
    print("  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
