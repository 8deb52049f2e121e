"""Finding runs by a value (issue 29): ``GET /api/runs/?input.order=A-1042`` at 1k / 10k / 100k runs.

The API's query (the caller's runs, ``RunFilter``'s value search, newest first, one page of 50) is timed on
SQLite and, when its server binaries are installed, on a private PostgreSQL cluster. Runs and their ``RunValue``
rows are bulk-inserted as the designer writes them (``designer.runs.values.pairs_of`` of each input and output).
Beside it, the peer: the same search as a scan of the stored input text (``RunInput.value`` LIKE, what a search
without the index would have to do, since the input is JSON text SQL cannot look into). Median of 15 queries.
Nothing is asserted.

    python -m bench run_search
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from bench import _workloads as w
from bench.bench_engine import table

SIZES = tuple(int(size) for size in os.environ.get("BENCH_RUN_SEARCH_SIZES", "1000,10000,100000").split(","))
REPEATS = 15


def _leg() -> None:
    user, team = w.setup_leg()
    from django.db import connection, transaction

    from designer.core.filters import apply_filters
    from designer.models import Run, RunInput, RunValue, Workflow
    from designer.runs.filters import RunFilter
    from designer.runs.selectors import runs_for
    from designer.runs.values import pairs_of

    workflow = Workflow.objects.create(team=team, slug="orders", name="Orders")
    rows: list[dict[str, Any]] = []
    made = 0

    def median_ms(query: Any) -> float:
        took = []
        for _ in range(REPEATS):
            began = time.perf_counter()
            list(query())
            took.append(time.perf_counter() - began)
        return statistics.median(took) * 1000

    for size in SIZES:
        with transaction.atomic():
            while made < size:
                batch = range(made, min(size, made + 2000))
                runs = Run.objects.bulk_create(Run(team=team, workflow=workflow, document={}, status="completed",
                                                   output={"total": n % 97}) for n in batch)
                inputs = [{"order": f"A-{n}", "customers": [{"id": f"C-{n}"}, {"id": f"C-{n + 1}"}]} for n in batch]
                RunInput.objects.bulk_create(RunInput(run=run, value=value)
                                             for run, value in zip(runs, inputs, strict=True))
                RunValue.objects.bulk_create(
                    RunValue(run_id=run.pk, side=side, path=path, text=text)
                    for run, value in zip(runs, inputs, strict=True)
                    for side, values in (("input", value), ("output", run.output))
                    for path, text in pairs_of(values))
                made = batch.stop
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        wanted = f"A-{size // 2}"

        def indexed(wanted: str = wanted) -> Any:
            return apply_filters(RunFilter, {"input.order": wanted}, runs_for(user=user), request=None,
                                 strict=True).queryset[:50]

        def scanned(wanted: str = wanted) -> Any:
            # The input is JSON text in a text column on both databases: a scan is LIKE over that text.
            matching = RunInput.objects.extra(where=["value LIKE %s"],
                                              params=[f'%"order": "{wanted}"%']).values("run_id")
            return runs_for(user=user).filter(pk__in=matching)[:50]

        assert [run.pk for run in indexed()] == [run.pk for run in scanned()] != []
        rows.append({"vendor": connection.vendor, "runs": size, "indexed_ms": median_ms(indexed),
                     "scan_ms": median_ms(scanned), "values": RunValue.objects.count()})
    w.print_rows(rows)


def main() -> int:
    env = w.leg_env()
    rows = w.run_sqlite_leg("bench.bench_run_search", env)
    if os.environ.get("BENCH_RUN_SEARCH_POSTGRES", "1") != "0" and w.postgres_available():
        rows += w.run_postgres_leg("bench.bench_run_search", env)
    cells = [[row["vendor"], f"{row['runs']:,}", f"{row['values']:,}", f"{row['indexed_ms']:.2f}",
              f"{row['scan_ms']:.2f}", f"{row['scan_ms'] / row['indexed_ms']:.1f}x"] for row in rows]
    table(f"Runs found by input.order (one page of 50, median of {REPEATS}); {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}",
          ["database", "runs", "value rows", "indexed ms", "scan of the input ms", "scan / indexed"], cells,
          "indexed = RunValue's (side, path, text, run) index, as the API and the runs list search; scan = the "
          "same search as LIKE over the stored input text, what a search without the index costs")
    return 0


if __name__ == "__main__":
    w.leg_or_main(_leg, main)
