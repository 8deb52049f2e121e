"""Notifications (issue 26): people and systems told when a run fails, stops for a person or completes.

``models`` (a team's default rule, a workflow's own rule, the delivery log), ``services`` (saving rules,
what a run's end sends, delivering by email and signed webhook with retries, sending a test), ``views`` (the
team's Notifications page). Runs reach here from the executor, in the transaction that stores their status;
deliveries are tasks, enqueued when it commits, so a slow mail server never holds a run's worker.
"""
