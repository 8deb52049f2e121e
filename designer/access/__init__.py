"""Access: who may do what. Teams and their members (the ``Team`` and ``Membership`` tables are still in
``designer.models``), invitations, API tokens, workflows shared with other teams (grants) and sign-in limits.

``models`` (invitations, tokens, sign-in counters), ``teams``, ``invitations``, ``tokens`` and ``grants``
(services: keyword-only, transactional writes that start from the actor), ``login_throttle`` (the sign-in
forms' limits). Roles themselves are decided in ``designer.access.permissions``, which every domain asks.
"""
