"""Team pages in headless Chromium: create a team, invite by username and by email, revoke an invitation, accept one
(in the app and through the emailed link with a new account), change a role, remove a member, and copy a workflow into
another team from its sharing page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.access import invitations as invitation_services
from designer.access import teams as team_services
from designer.models import Invitation, Membership, Team, Workflow
from designer.workflows import services as workflow_services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def settled(page: Page) -> None:
    """Wait until htmx has finished swapping and processing content.

    htmx binds triggers on swapped-in elements during its settle step; an event fired on the new
    elements before that (easy on a loaded machine) is lost.
    """
    page.wait_for_function("() => document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling') === null")


def test_create_a_team_and_manage_its_members(
    logged_in_page: Page, live_server: Any, user: Any, make_user: Any, artifacts_dir: Path
) -> None:
    page = logged_in_page
    bob = make_user("bob", email="bob@example.com")
    make_user("carol", email="carol@example.com")

    page.goto(f"{live_server.url}/teams/")
    page.get_by_label("Name").fill("Payments")
    page.get_by_role("button", name="Create team").click()
    expect(page.locator("h1")).to_contain_text("Payments")
    expect(page.locator(".messages")).to_contain_text("You are its owner")
    team = Team.objects.get(name="Payments")

    members = page.locator("#members")
    page.get_by_label("Username or email").fill("bob")
    page.locator("#invite-role").select_option("viewer")
    page.get_by_role("button", name="Invite").click()
    expect(members.locator('tr[data-invitation="bob"]')).to_be_visible()
    expect(members.locator(".notice")).to_contain_text("Invited bob as viewer. They join once they accept")
    expect(members.locator('tr[data-member="bob"]')).to_have_count(0)

    settled(page)
    page.get_by_label("Username or email").fill("CAROL@example.com")
    page.get_by_role("button", name="Invite").click()
    expect(members.locator('tr[data-invitation="CAROL@example.com"]')).to_be_visible()

    # An unknown name gets the very same answer: nothing tells the owner whether an account exists.
    settled(page)
    page.get_by_label("Username or email").fill("nobody")
    page.get_by_role("button", name="Invite").click()
    expect(members.locator(".notice")).to_contain_text("Invited nobody as editor. They join once they accept")

    settled(page)
    page.once("dialog", lambda dialog: dialog.accept())
    members.locator('tr[data-invitation="nobody"]').get_by_role("button", name="Revoke").click()
    expect(members.locator(".notice")).to_have_text("Invitation for nobody revoked.")
    expect(members.locator('tr[data-invitation="nobody"]')).to_have_count(0)

    # Accepted outside this page (the service, as bob would in the app): bob and carol are now members.
    for name in ("bob", "carol"):
        invitation = Invitation.objects.get(team=team, user__username=name)
        invitation_services.accept_invitation(actor=invitation.user, invitation=invitation)
    page.reload()

    # Changing the select saves at once (htmx), no button.
    settled(page)
    members.get_by_label("Role of bob").select_option("editor")
    expect(members.locator(".notice")).to_have_text("bob is now editor.")
    assert Membership.objects.get(team=team, user=bob).role == "editor"

    # The only owner is offered no role select and no Leave (the service refuses anyway); the page says why.
    me = members.locator(f'tr[data-member="{user.get_username()}"]')
    expect(me.get_by_test_id("sole-owner")).to_have_text(
        "The only owner: make someone else owner before you change your role or leave.")
    expect(me.locator("select")).to_have_count(0)
    expect(me.get_by_role("button")).to_have_count(0)
    page.screenshot(path=artifacts_dir / "teams-members.png", full_page=True)
    # With a second owner, both can step down or leave.
    settled(page)
    members.get_by_label("Role of bob").select_option("owner")
    expect(me.get_by_label(f"Role of {user.get_username()}")).to_have_value("owner")
    expect(me.get_by_role("button", name="Leave")).to_be_visible()
    expect(me.get_by_test_id("sole-owner")).to_have_count(0)

    page.once("dialog", lambda dialog: dialog.accept())
    settled(page)
    members.locator('tr[data-member="carol"]').get_by_role("button", name="Remove").click()
    expect(members.locator('tr[data-member="carol"]')).to_have_count(0)
    assert sorted(Membership.objects.filter(team=team).values_list("user__username", flat=True)) == ["alice", "bob"]


def test_sharing_shows_the_team_and_an_owner_copies_into_another_team(
    logged_in_page: Page, live_server: Any, user: Any, artifacts_dir: Path
) -> None:
    page = logged_in_page
    acme = team_services.create_team(actor=user, name="Acme")
    lab = team_services.create_team(actor=user, name="Lab")
    workflow = workflow_services.create_workflow(actor=user, team=acme, name="Refunds")

    page.goto(f"{live_server.url}/workflows/{workflow.pk}/sharing/")
    expect(page.locator("h2", has_text="Shared with")).to_contain_text("Acme")
    expect(page.locator(f'tr[data-member="{user.get_username()}"]')).to_contain_text("owner")
    page.screenshot(path=artifacts_dir / "teams-sharing.png", full_page=True)

    page.get_by_label("Team", exact=True).select_option(label="Lab")
    page.get_by_label("Name of the copy").fill("Refunds (lab)")
    page.get_by_role("button", name="Duplicate").click()
    expect(page.locator(".messages")).to_contain_text("Copied “Refunds” into Lab")
    expect(page.locator("h2", has_text="Shared with")).to_contain_text("Lab")
    copy = Workflow.objects.get(team=lab)
    assert copy.name == "Refunds (lab)" and page.url.endswith(f"/workflows/{copy.pk}/sharing/")


def test_an_invited_user_accepts_in_the_app(
    page: Page, login: Any, live_server: Any, make_user: Any, artifacts_dir: Path
) -> None:
    olivia = make_user("olivia", email="olivia@example.com")
    bob = make_user("bob", email="bob@example.com")
    team = team_services.create_team(actor=olivia, name="Payments")
    invitation_services.invite(actor=olivia, team=team, user="bob", role="editor", site_url=live_server.url)

    login(page, bob)
    page.goto(f"{live_server.url}/teams/")
    invitation = page.locator('#my-invitations li[data-invitation="payments"]')
    expect(invitation).to_contain_text("Payments")
    expect(invitation).to_contain_text("from olivia")
    assert not Membership.objects.filter(team=team, user=bob).exists()
    page.screenshot(path=artifacts_dir / "teams-invitation.png", full_page=True)
    invitation.get_by_role("button", name="Accept").click()
    expect(page.locator("h1")).to_contain_text("Payments")
    expect(page.locator(".messages")).to_contain_text("You joined Payments as editor.")
    expect(page.locator('tr[data-member="bob"]')).to_be_visible()
    assert Membership.objects.get(team=team, user=bob).role == "editor"


def test_a_new_person_creates_an_account_through_the_emailed_link(
    page: Page, live_server: Any, make_user: Any, settings: Any
) -> None:
    from django.core import mail

    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    olivia = make_user("olivia", email="olivia@example.com")
    team = team_services.create_team(actor=olivia, name="Payments")
    invitation_services.invite(actor=olivia, team=team, user="newcomer@example.com", role="viewer",
                               site_url=live_server.url)
    link = next(word for word in mail.outbox[-1].body.split() if word.startswith(live_server.url))

    page.goto(link)
    expect(page.locator("h1")).to_contain_text("Join Payments")
    page.get_by_label("Username").fill("newt")
    page.get_by_label("Password", exact=True).fill("a long passphrase 42")
    page.get_by_label("Password again").fill("a long passphrase 42")
    page.get_by_role("button", name="Create account and join").click()
    expect(page.locator(".messages")).to_contain_text("Welcome, newt: you joined Payments as viewer.")
    expect(page.locator('tr[data-member="newt"]')).to_be_visible()
    assert Membership.objects.get(team=team, user__username="newt").role == "viewer"
