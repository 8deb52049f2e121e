"""Triggers: what starts runs without a person. Webhooks (a secret URL, optionally signed calls), schedules (a
cron expression in a time zone) and the record of each delivery or tick.

``models`` (tables), ``services`` (writes and the calls that fire runs), ``api`` (the DRF endpoints), ``cron``
(the expression grammar and next-tick arithmetic), ``signature`` (signed webhook calls). The pages' views are
still in ``designer.triggers.workflow_page``, beside the workflow page they are part of.
"""
