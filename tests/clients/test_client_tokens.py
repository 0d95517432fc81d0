"""The client's own-token methods against a real local service: add one, list them with who
issued each, revoke one; an administrator's issuance replaces them all."""

from __future__ import annotations

import pytest

from agent_memory_client import Client, Unauthorized
from tests.clients.conftest import LocalService


def test_a_person_manages_their_own_tokens(local_service: LocalService) -> None:
    _org, user_id, token = local_service.user()
    with Client(base_url=local_service.url, token=token) as ben:
        laptop = ben.add_my_token()
        held = ben.my_tokens()
        assert [(t.prefix, t.issued_by) for t in held] == [
            (held[0].prefix, "admin token"),
            (laptop.token_prefix, user_id),
        ]
        ben.revoke_my_token(laptop.token_prefix)
        assert [t.prefix for t in ben.my_tokens()] == [held[0].prefix]

    with Client(base_url=local_service.url, token=local_service.admin_token) as admin:
        rotated = admin.issue_token(user_id)
    old = Client(base_url=local_service.url, token=token, max_retries=0)
    with old, pytest.raises(Unauthorized):
        old.me()
    with Client(base_url=local_service.url, token=rotated.token) as ben:
        assert [t.prefix for t in ben.my_tokens()] == [rotated.token_prefix]
