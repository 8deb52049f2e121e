"""What tests/conftest.py sets on each test, and what CI relies on it for.

The PostgreSQL leg of CI (.ci/run) leaves out the tests marked ``no_database``, on the grounds that such a test is
refused every query and so runs alike on every engine; these tests hold that ground.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.hashers import get_hasher
from django.contrib.auth.models import User


def test_a_test_that_requests_no_database_is_marked_and_refused_every_query(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("no_database") is not None
    with pytest.raises(RuntimeError, match="Database access not allowed"):
        User.objects.count()


def test_a_test_that_uses_the_database_is_not_marked(db: None, request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("no_database") is None
    assert User.objects.count() == 0


@pytest.mark.django_db
def test_a_test_marked_django_db_is_not_marked_and_hashes_passwords_quickly(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("no_database") is None
    assert get_hasher().algorithm == "md5"
