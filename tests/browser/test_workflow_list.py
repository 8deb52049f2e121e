"""The Workflows page in headless Chromium: workflows another team shares with yours are listed apart, with the
holding team and the granted role, filtered by the "whose workflows" select and gone once the grant is revoked;
a filter value a page cannot use is dropped and named in a notice, never an error page or a silently empty list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.access import grants as grant_services
from designer.access import teams as team_services
from designer.workflows import services as workflow_services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def shared(user: Any, make_user: Any) -> dict[str, Any]:
    """``user`` owns Partners with its own workflow; Acme (someone else's) shares "Invoices" with Partners."""
    partners = team_services.create_team(actor=user, name="Partners")
    mine = workflow_services.create_workflow(actor=user, team=partners, name="Mine")
    olga = make_user("olga")
    acme = team_services.create_team(actor=olga, name="Acme")
    invoices = workflow_services.create_workflow(actor=olga, team=acme, name="Invoices",
                                                 description="Bill every customer once a month")
    grant = grant_services.grant_workflow(actor=olga, workflow=invoices, team=partners.slug, role="runner")
    return {"olga": olga, "mine": mine, "invoices": invoices, "grant": grant}


def settled(page: Page) -> None:
    page.wait_for_function("() => document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling') === null")


def test_shared_workflows_are_listed_with_their_team_and_role_filtered_and_gone_when_revoked(
    logged_in_page: Page, live_server: Any, shared: dict[str, Any], artifacts_dir: Path
) -> None:
    page = logged_in_page
    page.goto(f"{live_server.url}/workflows/")
    section = page.locator('section[data-team="shared"]')
    expect(section.get_by_role("heading")).to_contain_text("Shared with your teams")
    row = section.locator(f'tr[data-workflow="{shared["invoices"].slug}"]')
    expect(row).to_have_attribute("data-grant-role", "runner")
    expect(row.locator(".shared-by")).to_contain_text("Acme")
    expect(row.locator(".shared-by")).to_contain_text(f"acme/{shared['invoices'].slug}")
    expect(row.locator(".grant-role")).to_contain_text("Partners: runner")
    expect(row.locator(".shared-badge")).to_be_visible()
    expect(row.get_by_role("button", name="Duplicate")).to_have_count(0)  # a shared workflow is not copied
    own = page.locator(f'section[data-team="partners"] tr[data-workflow="{shared["mine"].slug}"]')
    expect(own).to_be_visible()
    page.screenshot(path=artifacts_dir / "workflows-shared.png", full_page=True)

    # The "whose workflows" select swaps the list in place and keeps the choice in the address.
    whose = page.get_by_label("Whose workflows")
    whose.select_option("true")
    expect(own).to_have_count(0)
    expect(row).to_be_visible()
    expect(page).to_have_url(f"{live_server.url}/workflows/?q=&shared=true")
    settled(page)
    whose.select_option("false")
    expect(section).to_have_count(0)
    expect(own).to_be_visible()
    settled(page)

    # The row opens the shared workflow (read-only for a runner) and its runs.
    whose.select_option("")
    row.get_by_role("link", name="Invoices").click()
    expect(page).to_have_url(f"{live_server.url}/workflows/{shared['invoices'].pk}/edit/")

    grant_services.revoke_grant(actor=shared["olga"], workflow=shared["invoices"], grant_id=shared["grant"].pk)
    page.goto(f"{live_server.url}/workflows/")
    expect(page.locator('section[data-team="shared"]')).to_have_count(0)
    expect(own).to_be_visible()


def test_a_bad_filter_value_is_dropped_and_named_while_the_others_apply(
    logged_in_page: Page, live_server: Any, shared: dict[str, Any], artifacts_dir: Path
) -> None:
    page = logged_in_page
    page.goto(f"{live_server.url}/workflows/?shared=maybe&q=Mine")
    notice = page.locator(".filter-notice")
    expect(notice).to_have_attribute("role", "status")
    expect(notice).to_contain_text("Some filters were ignored")
    expect(notice).to_contain_text("shared: must be true or false, got 'maybe'")
    # The search still applies; the dropped filter shows as "any" in its select.
    expect(page.locator(f'tr[data-workflow="{shared["mine"].slug}"]')).to_be_visible()
    expect(page.locator('section[data-team="shared"]')).to_have_count(0)
    expect(page.get_by_label("Whose workflows")).to_have_value("")
    expect(page.get_by_label("Search workflows")).to_have_value("Mine")
    page.screenshot(path=artifacts_dir / "workflows-filter-notice.png", full_page=True)

    # Typing a search afterwards swaps the results without the bad value: the notice goes.
    page.get_by_label("Search workflows").fill("Invoices")
    expect(page.locator(f'tr[data-workflow="{shared["invoices"].slug}"]')).to_be_visible()
    expect(notice).to_have_count(0)

    page.goto(f"{live_server.url}/runs/?status=bogus&since=2024-02-30")
    notice = page.locator(".filter-notice")
    expect(notice).to_contain_text("status: unknown run status bogus")
    expect(notice).to_contain_text("since:")
    expect(page.locator("#f-status")).to_have_value("")
    expect(page.locator("#f-since")).to_have_value("")
    page.screenshot(path=artifacts_dir / "runs-filter-notice.png", full_page=True)
