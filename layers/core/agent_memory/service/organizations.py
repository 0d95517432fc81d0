"""Deleting an organization and everything in it (ADR 0086), for the admin token.

The organization is marked first (nothing is added to it from then on: no person, no key, no
settings, and its people's tokens and keys answer as revoked), then its service keys go; then
each person's data through their erasure, and their record and tokens with it; the agents and
agent_memories nobody's erasure took, its bots (or its links to others' bots), its channels,
its events, and its own rows last. Each step
reads what is left, so a call cut short is finished by the next, which counts only what it
removed itself.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from agent_memory.domain.errors import Conflict, NotFound
from agent_memory.persistence import keys
from agent_memory.persistence.identity import IdentityRepository
from agent_memory.persistence.org_contents import OrgContents
from agent_memory.persistence.retrying import until_it_lands
from agent_memory.persistence.service_keys import ServiceKeyRepository
from agent_memory.service.bot_learning import KIND as BOT_LEARNING
from agent_memory.service.bot_learning import learning_pool_id

if TYPE_CHECKING:
    from agent_memory.service.erasure import ErasureService

ORG_NOT_FOUND = "organization not found"


def delete_organization(
    repo: IdentityRepository,
    service_keys: ServiceKeyRepository,
    org_id: str,
    eraser: ErasureService,
) -> dict[str, int]:
    """What this call removed, by kind (snake_case names); NotFound when nothing of the
    organization is left."""
    if not repo.begin_deletion(org_id):
        raise NotFound(ORG_NOT_FOUND, ["orgId"])
    contents = OrgContents(repo.store)
    counts = {"service_keys": service_keys.revoke_all(org_id), "users": 0, "tokens": 0}
    people = repo.people_ids(org_id)

    def gone(user_id: str) -> None:
        """A person whose data went: their record, list rows and every token."""
        tokens = delete_holding(repo, org_id, user_id)
        if tokens is not None:
            counts["users"] += 1
            counts["tokens"] += tokens

    erased = eraser.erase_organization(org_id, people, contents, gone)
    counts |= asdict(erased)
    counts["bots"], counts["bot_links"] = contents.delete_bots(
        org_id, lambda bot_id: keys.learn_pk(BOT_LEARNING, learning_pool_id(bot_id, org_id))
    )
    counts["channels"] = contents.delete_channels(org_id)
    counts["events"] = contents.delete_events(org_id)
    counts["organizations"] = repo.finish_deletion(org_id)
    return counts


def delete_holding(repo: IdentityRepository, org_id: str, user_id: str) -> int | None:
    """A person's record, list rows and every token, read again while their tokens change:
    how many tokens went (None: no such person any more)."""

    def delete() -> int | None:
        holding = repo.holding(org_id, user_id)
        if holding is None:
            return None
        repo.delete_user(holding)
        return len(holding.tokens)

    return until_it_lands(delete, tokens_kept_changing)


def tokens_kept_changing() -> Conflict:
    return Conflict("the person's tokens kept changing; try again")
