"""Login throttling: failed sign-ins per username from one client address, and per address, with the Django test
client. Nobody can lock another person's account from elsewhere."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from designer.access.login_throttle import client_address, locked_for
from designer.models import LoginAttemptWindow

pytestmark = pytest.mark.django_db

WRONG = "not the password"
REAL_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


def attempt(client: Client, username: str, password: str, address: str = "10.0.0.1"):  # type: ignore[no-untyped-def]
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


def fail(client: Client, username: str, times: int, address: str = "10.0.0.1") -> None:
    for _ in range(times):
        response = attempt(client, username, WRONG, address)
        assert response.status_code == 200
        assert "enter a correct username and password" in response.content.decode()


def test_sixth_attempt_is_refused_with_429_even_with_the_right_password(client, user, password, settings):
    fail(client, user.username, 5)
    response = attempt(client, user.username, password)
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many failed sign-in attempts; try again in 15 minutes" in page
    assert 'role="alert"' in page
    assert "_auth_user_id" not in client.session


def test_refusal_does_not_reveal_whether_the_username_exists(client, user):
    fail(client, user.username, 5, address="10.0.0.1")
    fail(client, "nobody-by-that-name", 5, address="10.0.0.2")
    known = attempt(client, user.username, WRONG, "10.0.0.1")
    unknown = attempt(client, "nobody-by-that-name", WRONG, "10.0.0.2")
    assert known.status_code == unknown.status_code == 429
    message = "Too many failed sign-in attempts; try again in 15 minutes"
    assert message in known.content.decode() and message in unknown.content.decode()


def test_one_address_is_limited_across_usernames(client, make_user, password, settings):
    settings.TRELLIS_LOGIN_MAX_ADDRESS_FAILURES = 5
    other = make_user("bob")
    for name in ("a1", "a2", "a3", "a4", "a5"):
        fail(client, name, 1, address="10.9.9.9")
    assert attempt(client, other.username, password, "10.9.9.9").status_code == 429
    # another address may still sign in as bob
    response = attempt(client, other.username, password, "10.9.9.10")
    assert response.status_code == 302
    assert response["Location"] == reverse("home")


def test_wrong_passwords_from_elsewhere_do_not_lock_the_account(client, user, password):
    # Five wrong passwords from anywhere used to lock a named account for 15 minutes, for everyone.
    fail(client, user.username, 5, address="203.0.113.9")
    assert attempt(client, user.username, password, "203.0.113.9").status_code == 429
    assert locked_for(user.username, "203.0.113.9") > 0
    assert locked_for(user.username, "10.1.1.1") == 0
    response = attempt(client, user.username, password, "10.1.1.1")
    assert response.status_code == 302 and response["Location"] == reverse("home")


def test_one_username_from_one_address_is_limited_whatever_its_case(client, user, password):
    for index in range(5):
        fail(client, user.username.upper() if index % 2 else user.username, 1, address="10.1.0.1")
    assert attempt(client, user.username, password, "10.1.0.1").status_code == 429


def test_a_spread_of_addresses_each_gets_its_own_count(client, user, password):
    for index in range(5):
        fail(client, user.username, 4, address=f"10.1.2.{index}")
    assert attempt(client, user.username, password, "10.1.2.0").status_code == 302


def test_four_failures_then_success_clears_the_username_counter(client, user, password):
    fail(client, user.username, 4, address="10.2.0.1")
    response = attempt(client, user.username, password, "10.2.0.2")
    assert response.status_code == 302
    client.post(reverse("logout"))
    # counted afresh: four more failures from other addresses still leave the account open
    for index in range(4):
        fail(client, user.username, 1, address=f"10.2.1.{index}")
    assert attempt(client, user.username, password, "10.2.2.1").status_code == 302


def test_a_form_missing_its_password_does_not_clear_the_counter(client, user, password):
    fail(client, user.username, 4, address="10.3.0.1")
    response = client.post(reverse("login"), {"username": user.username}, REMOTE_ADDR="10.3.0.1")
    assert response.status_code == 200
    fail(client, user.username, 1, address="10.3.0.1")
    assert attempt(client, user.username, password, "10.3.0.1").status_code == 429


def test_window_and_limit_come_from_settings(client, user, password, settings):
    settings.TRELLIS_LOGIN_MAX_FAILURES = 2
    settings.TRELLIS_LOGIN_LOCKOUT_SECONDS = 60
    fail(client, user.username, 2)
    response = attempt(client, user.username, password)
    assert response.status_code == 429
    assert "try again in 1 minute." in response.content.decode()
    assert 0 < locked_for(user.username, "10.0.0.1") <= 60


def test_lock_ends_with_the_window(client, user, password, settings):
    # A real wait, no clock faked. The window is long enough that a loaded machine still answers the
    # attempt right after the failures inside it, and the test waits for its end rather than guessing it.
    settings.TRELLIS_LOGIN_LOCKOUT_SECONDS = 3
    fail(client, user.username, 5)
    assert attempt(client, user.username, password).status_code == 429
    assert locked_for(user.username, "10.0.0.1") > 0
    deadline = time.monotonic() + 30
    while locked_for(user.username, "10.0.0.1") > 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert locked_for(user.username, "10.0.0.1") == 0
    assert attempt(client, user.username, password).status_code == 302


def test_admin_login_is_refused_by_the_same_limit(client, make_user, password):
    admin = make_user("root", is_staff=True, is_superuser=True)
    fail(client, admin.username, 5, address="10.4.0.1")
    response = client.post(reverse("admin:login"), {"username": admin.username, "password": password},
                           REMOTE_ADDR="10.4.0.1")
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_client_address_uses_the_proxy_appended_entry_only_behind_the_proxy(rf, settings):
    request = rf.get("/", REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR="1.2.3.4, 5.6.7.8")
    settings.SECURE_PROXY_SSL_HEADER = None
    assert client_address(request) == "10.0.0.9"
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert client_address(request) == "5.6.7.8"


def _parallel_attempts(username: str, password: str, count: int) -> list[int]:
    """``count`` sign-ins at once, each in its own thread with its own client and database connection,
    released together by a barrier so they overlap inside the view."""
    barrier = threading.Barrier(count)

    def one(index: int) -> int:
        from django.db import connection

        client = Client()
        try:
            barrier.wait(timeout=30)
            response = client.post(reverse("login"), {"username": username, "password": password},
                                   REMOTE_ADDR="10.8.0.1")
            return response.status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(one, range(count)))


@pytest.mark.django_db(transaction=True)
def test_parallel_wrong_guesses_judge_no_more_than_the_limit(make_user: object, settings: object) -> None:
    """20 guesses at once for one username from one address: exactly 5 are judged (wrong password), the other 15
    refused unjudged.
    A read-then-write counter let all 20 through, since each read the count before any wrote it while the
    password was being checked."""
    # The real hasher: checking a password takes as long as in production, which is when attempts overlap.
    settings.PASSWORD_HASHERS = REAL_HASHERS  # type: ignore[attr-defined]
    user = make_user("target")  # type: ignore[operator]
    statuses = _parallel_attempts(user.username, WRONG, 20)
    assert sorted(statuses) == [200] * 5 + [429] * 15
    # The pair's row and the address's row each counted every one.
    assert LoginAttemptWindow.objects.filter(count__gte=20).count() == 2


@pytest.mark.django_db(transaction=True)
def test_parallel_attempts_above_the_limit_are_all_refused_even_with_the_right_password(
    make_user: object, password: str
) -> None:
    user = make_user("target")  # type: ignore[operator]
    client = Client()
    fail(client, user.username, 5, address="10.8.0.1")
    statuses = _parallel_attempts(user.username, password, 20)
    assert statuses == [429] * 20
