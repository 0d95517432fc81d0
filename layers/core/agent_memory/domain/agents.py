"""Agents: what Sessions run with. An Agent has an owner and may be shared with members.

Members of a shared Agent may read it and start Sessions with it (and, with agent memory,
read and change its memory). Sessions stay private to the person who started them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agent_memory.domain.access import Grants
from agent_memory.domain.errors import ValidationFailed

MAX_NAME_LENGTH = 200
MAX_MEMBERS = 100
AGENTS_BELONG_TO_A_PERSON = "agents and sessions belong to a person: use a user's token"


@dataclass(frozen=True)
class Agent:
    id: str
    org_id: str
    name: str
    owner: str
    members: tuple[str, ...] = field(default_factory=tuple)

    def grants(self) -> Grants:
        return Grants(self.org_id, self.owner, frozenset(self.members))


def new_agent(agent_id: str, org_id: str, owner: str, name: str, members: Sequence[str]) -> Agent:
    """An Agent owned by `owner`; members are kept once each, in the order given."""
    name = name.strip()
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise ValidationFailed(f"name is 1..{MAX_NAME_LENGTH} characters", ["name"])
    if len(members) > MAX_MEMBERS:
        raise ValidationFailed(f"at most {MAX_MEMBERS} members", ["members"])
    unique = tuple(m for m in dict.fromkeys(members) if m != owner)
    return Agent(agent_id, org_id, name, owner, unique)
