"""Migration 0021 moves each run's input from its row to a ``RunInput`` row, losing none, and back."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("designer", "0020_runcheckpoint_part_keys_from_state")]
AFTER = [("designer", "0021_run_input_row")]


def _migrate(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def test_existing_inputs_move_to_their_own_rows_and_back() -> None:
    old = _migrate(BEFORE)
    try:
        team = old.get_model("designer", "Team").objects.create(name="Migrate", slug="migrate")
        workflow = old.get_model("designer", "Workflow").objects.create(team=team, slug="w", name="W")
        Run = old.get_model("designer", "Run")
        inputs = [{"items": list(range(n)), "name": f"ü{n}"} for n in range(3)] + [{}]
        pks = [Run.objects.create(team=team, workflow=workflow, document={}, input=value).pk for value in inputs]

        new = _migrate(AFTER)
        stored = dict(new.get_model("designer", "RunInput").objects.values_list("run_id", "value"))
        assert stored == dict(zip(pks, inputs, strict=True))

        back = _migrate(BEFORE)
        assert dict(back.get_model("designer", "Run").objects.values_list("pk", "input")) == stored
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("designer"))
