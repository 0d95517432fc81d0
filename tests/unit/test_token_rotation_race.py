"""A rotation and an issuance racing: a token added while a rotation reads the person's tokens
is rotated away too (the rotation's write is refused and it reads again), never left working."""

from __future__ import annotations

from agent_memory.domain.identity import SERVICE_ADMIN, Principal, hash_token
from agent_memory.persistence.identity import Holding, IdentityRepository
from agent_memory.service.identity import IdentityService
from tests.support.in_memory import FixedClock, InMemoryStore, SequentialIds

BEN = Principal(user_id="ben", org_id="acme", role="member")


class AddsWhileRotationReads(IdentityRepository):
    """The person adds a token of their own just after the rotation read their tokens."""

    def __init__(self, store: InMemoryStore) -> None:
        super().__init__(store)
        self.service: IdentityService | None = None
        self.added: list[str] = []

    def holding(self, org_id: str, user_id: str) -> Holding | None:
        read = super().holding(org_id, user_id)
        service, self.service = self.service, None  # once, and not for the add's own read
        if service is not None:
            self.added.append(service.issue_own_token(BEN).secret)
        return read


def test_a_token_added_during_a_rotation_is_rotated_away() -> None:
    store = InMemoryStore()
    repo = AddsWhileRotationReads(store)
    service = IdentityService(repo, FixedClock(), SequentialIds(), admin_token_sha256="")
    service.create_org(SERVICE_ADMIN, "acme", "Acme")
    first = service.create_user(SERVICE_ADMIN, "acme", "ben", "Ben", "member").token
    repo.service = service

    rotated = service.issue_token(SERVICE_ADMIN, "ben")

    assert len(repo.added) == 1
    for gone in (first.secret, repo.added[0]):
        assert repo.principal_for(hash_token(gone)) is None
    assert repo.principal_for(rotated.digest) == BEN
    ben = repo.holding("acme", "ben")
    assert ben is not None
    assert [t.held.prefix for t in ben.tokens] == [rotated.prefix]
