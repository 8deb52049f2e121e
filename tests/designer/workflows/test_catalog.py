from __future__ import annotations

import textwrap

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from designer.workflows import catalog
from runtime.errors import TaskRegistrationError
from runtime.tasks import TaskRegistry, builtin_registry


def _app(tmp_path, name: str, tasks_source: str | None) -> str:
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    if tasks_source is not None:
        (package / "workflow_tasks.py").write_text(textwrap.dedent(tasks_source))
    return name


GOOD = """
    from runtime.tasks import TaskRegistry

    registry = TaskRegistry()

    @registry.task(labels=("ok", "late"))
    def check_parcel(tracking: str) -> dict:
        '''Look a parcel up.'''
        return {"tracking": tracking}
"""


def test_site_registry_holds_builtins_and_the_designer_demo_tasks():
    registry = catalog.registry()
    assert isinstance(registry, TaskRegistry)
    names = set(registry.names())
    assert set(builtin_registry().names()) <= names
    assert {"fetch_orders", "price_order", "ship_order", "sum_totals", "assess_request",
            "record_decision"} <= names
    assert registry is catalog.registry()  # built once


def test_tasks_of_any_installed_app_are_discovered(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _app(tmp_path, "parcels_app", GOOD)
    _app(tmp_path, "plain_app", None)  # apps without workflow_tasks.py are fine
    with override_settings(INSTALLED_APPS=[*settings.INSTALLED_APPS, "parcels_app", "plain_app"]):
        registry = catalog.build_registry()
    spec = registry.get("check_parcel")
    assert spec.labels == ("ok", "late") and spec.description == "Look a parcel up."
    assert "fetch_orders" in registry


def test_duplicate_task_names_name_the_module(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _app(tmp_path, "clash_app", """
        from runtime.tasks import TaskRegistry

        registry = TaskRegistry()

        @registry.task
        def fetch_orders(customer: str) -> list:
            return []
    """)
    with override_settings(INSTALLED_APPS=[*settings.INSTALLED_APPS, "clash_app"]):
        with pytest.raises(TaskRegistrationError, match=r"clash_app\.workflow_tasks"):
            catalog.build_registry()


def test_a_module_without_a_registry_is_refused(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _app(tmp_path, "loose_app", "def some_task():\n    return 1\n")
    with override_settings(INSTALLED_APPS=[*settings.INSTALLED_APPS, "loose_app"]):
        with pytest.raises(TaskRegistrationError, match="must define `registry"):
            catalog.build_registry()


def test_reset_rebuilds(monkeypatch):
    before = catalog.registry()
    catalog.reset()
    try:
        assert catalog.registry() is not before
    finally:
        catalog.reset()


def test_demo_tasks_are_deterministic_and_typed():
    from runtime.state import RuntimeContext

    registry = catalog.registry()
    customer = {"id": "C-7", "name": "Ada", "tier": "gold"}
    fetch = registry.get("fetch_orders")
    first = fetch.finish(fetch.bind({"customer": customer}, RuntimeContext())())
    second = fetch.finish(fetch.bind({"customer": customer}, RuntimeContext())())
    assert first == second and first[0] == "ok" and 1 <= len(first[1]) <= 3
    price = registry.get("price_order")
    label, priced = price.finish(price.bind({"customer": customer, "order": first[1][0]}, RuntimeContext())())
    assert priced["discount"] == round(priced["subtotal"] * 0.1, 2)
    assert priced["total"] == round(priced["subtotal"] - priced["discount"], 2)
    assess = registry.get("assess_request")
    assert assess.finish(assess.bind({"amount": 5000}, RuntimeContext())())[0] == "review"
    assert assess.finish(assess.bind({"amount": 50}, RuntimeContext())())[0] == "auto"


def test_task_modules_setting_adds_a_module_and_the_catalogue_follows_the_setting():
    assert "pack_item" not in catalog.registry()
    with override_settings(TRELLIS_TASK_MODULES=["tests.browser.editor_tasks"]):
        assert "tests.browser.editor_tasks" == catalog.task_modules()[-1]
        spec = catalog.registry().get("pack_item")
        assert spec.description == "Pack one order line for a customer."
        assert "fetch_orders" in catalog.registry()  # the apps' tasks stay
    assert "pack_item" not in catalog.registry()  # the override ended: rebuilt without it


def test_task_modules_setting_clash_and_shape_errors_name_the_setting_or_module(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "clashing_tasks.py").write_text(textwrap.dedent("""
        from runtime.tasks import TaskRegistry

        registry = TaskRegistry()

        @registry.task
        def fetch_orders(customer: str) -> list:
            return []
    """))
    with override_settings(TRELLIS_TASK_MODULES=["clashing_tasks"]):
        with pytest.raises(TaskRegistrationError, match=r"^clashing_tasks: "):
            catalog.build_registry()
    with override_settings(TRELLIS_TASK_MODULES="clashing_tasks"):
        with pytest.raises(ImproperlyConfigured, match="TRELLIS_TASK_MODULES .*must be a list"):
            catalog.build_registry()
