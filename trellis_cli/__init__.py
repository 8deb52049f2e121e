"""``python -m trellis_cli``: a team's workflows as a folder of files, kept in git, pushed back through the API.

It speaks only the HTTP API with a personal access token (the same API a generated client uses), so it needs
nothing of the server's code or database: ``pull`` writes one readable, stably ordered file per workflow,
``diff`` shows what the folder would change, ``push`` saves each changed draft through the one write path
(``PUT /api/workflows/{id}/document/`` with the revision it was pulled at, so a draft someone changed since is
refused, never overwritten). Standard library only, so it runs from any Python 3.11+ without the project.
"""
