"""What agent memory and session memory share: Remember and Forget bodies, an entry as
answered, the memory text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import Field

from agent_memory.api.contracts.base import NOT_BLANK, Answer, Body, Mirror, NotBlank
from agent_memory.domain.bounds import KEYED_POOL_CONTENT, KEYED_POOL_ENTRIES, MAX_ENTRY_CONTENT

if TYPE_CHECKING:
    # Loaded with the services, not with the routes: a cold start stays cheap.
    from agent_memory.domain import session_memory as memory
    from agent_memory.domain.entries import Entry, Source

POOL_BOUND = (
    f"A memory holds at most {KEYED_POOL_ENTRIES} entries and "
    f"{KEYED_POOL_CONTENT} characters of content (retracted entries count): a Remember "
    "that would pass either is 413 TooLarge."
)
MemoryKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9._-]+$",
        description="What the entry is about, kept in plaintext: a key that looks like a secret "
        "(a credential, a long random string, a card number) is a 400 naming it",
    ),
]


class RememberBody(Body):
    tag: Literal["Remember"] = Field(alias="_tag")
    key: MemoryKey
    content: Annotated[str, NotBlank] = Field(
        min_length=1,
        max_length=MAX_ENTRY_CONTENT,
        description=POOL_BOUND,
        json_schema_extra=NOT_BLANK,
    )
    # Each pool narrows the kinds it keeps.
    kind: str

    def to_domain(self) -> memory.Remember:
        from agent_memory.domain import session_memory as memory

        return memory.Remember(self.key, self.content, self.kind)


class ForgetBody(Body):
    tag: Literal["Forget"] = Field(alias="_tag")
    key: MemoryKey

    def to_domain(self) -> memory.Forget:
        from agent_memory.domain import session_memory as memory

        return memory.Forget(self.key)


class KeyedEntryOut(Answer):
    """An entry of a keyed memory; each pool shows its entry's sources its own way."""

    key: str
    content: str
    kind: str
    sources: list[Any]
    updatedAt: int
    status: Literal["active", "retracted"]

    @classmethod
    def source(cls, source: Source) -> Any:
        raise NotImplementedError

    @classmethod
    def of(cls, entry: Entry) -> Self:
        meta = entry.meta
        shown = (cls.source(s) for s in meta.sources)
        return cls(
            key=meta.name,
            content=entry.content,
            kind=meta.kind,
            sources=[s for s in shown if s is not None],
            updatedAt=meta.updated_at,
            status=meta.status,
        )


class MemoryText(Mirror):
    text: str
    keys: list[str]
    length: int
    maxLength: int
