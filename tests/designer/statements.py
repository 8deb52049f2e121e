"""What a request or a service call sends to the database, for the tests that pin it: the statements one call made,
and which of them read only the caller's access (so a test can say "read once", "not read again")."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

#: A statement that reads only the caller's memberships or grants (its columns are theirs): the one statement of
#: ``permissions.workflow_access``, or an ORM read of ``Membership`` or ``WorkflowGrant``. Not a statement that
#: scopes another table by them in a subquery (``for_user``, ``get_run``'s run read with the caller's access).
ACCESS_READ = re.compile(r'^SELECT (\(SELECT m\.role FROM "designer_membership"'
                         r'|"designer_membership"\.|"designer_workflowgrant"\.)')


def captured(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """What ``call()`` answered, and the SQL of every statement it sent, in order."""
    with CaptureQueriesContext(connection) as context:
        answer = call()
    return answer, [query["sql"] for query in context.captured_queries]


def access_reads(statements: list[str] | CaptureQueriesContext) -> int:
    """How many of ``statements`` (or of what a ``CaptureQueriesContext`` captured) read the caller's access."""
    if isinstance(statements, CaptureQueriesContext):
        statements = [query["sql"] for query in statements.captured_queries]
    return sum(1 for sql in statements if ACCESS_READ.match(sql))
