"""Agent memories (seed 004) over HTTP: the seed's object, lists and the request bodies."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, WithJsonSchema
from pydantic.config import JsonDict

from agent_memory.api.contracts.base import NOT_BLANK, Answer, Body, ListOf, Mirror, NotBlank
from agent_memory.domain.bounds import (
    DEFAULT_IMPORTANCE,
    DEFAULT_MEMORY_PAGE,
    MAX_ENTITY_ID_CHARS,
    MAX_ENTITY_TEXT_CHARS,
    MAX_MEMORY_CONTENT_CHARS,
    MAX_MEMORY_PAGE,
    MAX_NAMESPACE_DEPTH,
    MAX_NAMESPACE_KEY_CHARS,
    MAX_NAMESPACE_LABEL_CHARS,
)

# The rules and the entry model load with the services, or in the method that converts.
if TYPE_CHECKING:
    from agent_memory.domain.memory_objects import Entity, MemoryObject, NewMemory

CategoryName = Literal["preference", "fact", "instruction"]
EntityTypeName = Literal["account", "actor", "entity"]
_METADATA = "Any JSON value (object, array, string, number, boolean or null), at most 16 KB."
_EXPIRES = "RFC 3339 date-time with any offset (stored in UTC, to the millisecond), or null."
Label = Annotated[str, Field(min_length=1, max_length=MAX_NAMESPACE_LABEL_CHARS)]
_NAMESPACE = (
    "Where a key-value client keeps the memory (e.g. a LangGraph store's namespace): "
    f"1 to {MAX_NAMESPACE_DEPTH} labels; set at creation with `key`, never changed. A "
    "namespaced memory is its creator's alone (404 to everyone else of the organization)."
)
_KEY = "The memory's key, unique within the creator's namespace (a second create is a 409 at key)."
_CONTENT = f"Plain text for an agent to read, 1 to {MAX_MEMORY_CONTENT_CHARS} characters."


class EntityIn(Body):
    id: str = Field(min_length=1, max_length=MAX_ENTITY_ID_CHARS)
    # Accepted so a client can send back the entity it read.
    object: Literal["entity"] = "entity"
    type: EntityTypeName
    name: str | None = Field(default=None, max_length=MAX_ENTITY_TEXT_CHARS)
    handle: str | None = Field(default=None, max_length=MAX_ENTITY_TEXT_CHARS)

    def to_domain(self) -> Entity:
        from agent_memory.domain.memory_objects import Entity

        return Entity(id=self.id, type=self.type, name=self.name, handle=self.handle)


# `namespace` and `key` come together or not at all (null is absent): the schema says so.
_BOTH_OR_NEITHER: JsonDict = {
    "anyOf": [
        {"properties": {"namespace": {"type": "null"}, "key": {"type": "null"}}},
        {
            "required": ["namespace", "key"],
            "properties": {"namespace": {"type": "array"}, "key": {"type": "string"}},
        },
    ]
}


class CreateAgentMemory(Body):
    model_config = ConfigDict(**Body.model_config, json_schema_extra=_BOTH_OR_NEITHER)

    category: CategoryName
    content: Annotated[str, NotBlank] = Field(
        min_length=1,
        max_length=MAX_MEMORY_CONTENT_CHARS,
        description=_CONTENT,
        json_schema_extra=NOT_BLANK,
    )
    metadata: Any = Field(default=None, description=_METADATA)
    entity: EntityIn | None = None
    importance: float = Field(default=DEFAULT_IMPORTANCE, ge=0, le=1, allow_inf_nan=False)
    expires_at: str | None = Field(
        default=None, description=_EXPIRES, json_schema_extra={"format": "date-time"}
    )
    namespace: list[Label] | None = Field(
        default=None, min_length=1, max_length=MAX_NAMESPACE_DEPTH, description=_NAMESPACE
    )
    key: str | None = Field(
        default=None, min_length=1, max_length=MAX_NAMESPACE_KEY_CHARS, description=_KEY
    )

    def to_domain(self) -> NewMemory:
        from agent_memory.domain.memory_objects import NewMemory

        return NewMemory(
            category=self.category,
            content=self.content,
            metadata=self.metadata,
            entity=self.entity.to_domain() if self.entity else None,
            importance=self.importance,
            expires_at=self.expires_at,
            namespace=self.namespace,
            key=self.key,
        )


class UpdateAgentMemory(Body):
    """Only the fields sent change. `null` clears metadata, entity and expires_at; it is a
    400 for category, content and importance."""

    # `None` here only means "not sent": a sent null is a 400, so the schema has no null.
    category: Annotated[
        CategoryName | None,
        WithJsonSchema({"enum": ["preference", "fact", "instruction"], "type": "string"}),
    ] = None
    content: Annotated[
        str | None,
        NotBlank,
        WithJsonSchema(
            {"type": "string", "minLength": 1, "maxLength": MAX_MEMORY_CONTENT_CHARS, **NOT_BLANK}
        ),
    ] = Field(default=None, min_length=1, max_length=MAX_MEMORY_CONTENT_CHARS)
    metadata: Any = Field(default=None, description=_METADATA)
    entity: EntityIn | None = None
    importance: Annotated[
        float | None, WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1})
    ] = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    expires_at: str | None = Field(
        default=None, description=_EXPIRES, json_schema_extra={"format": "date-time"}
    )

    def to_patch(self) -> dict[str, Any]:
        patch = {name: getattr(self, name) for name in self.model_fields_set}
        if isinstance(patch.get("entity"), EntityIn):
            patch["entity"] = patch["entity"].to_domain()
        return patch


# A recall query is a turn's text, not a document.
MAX_QUERY_CHARS = 10_000


class RecallAgentMemories(Body):
    limit: int = Field(default=DEFAULT_MEMORY_PAGE, ge=1, le=MAX_MEMORY_PAGE)
    query: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="Rank by meaning (closest first, ties by importance)",
    )
    entity: str | None = Field(
        default=None, min_length=1, max_length=MAX_ENTITY_ID_CHARS, description="An entity id"
    )
    namespace: list[Label] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_NAMESPACE_DEPTH,
        description="Only memories under this namespace prefix (labels)",
    )


class EntityOut(Mirror):
    id: str
    object: Literal["entity"] = "entity"
    type: EntityTypeName
    name: str | None
    handle: str | None


class AgentMemoryOut(Answer):
    id: str
    object: Literal["agent_memory"] = "agent_memory"
    category: CategoryName
    content: str
    metadata: Any
    entity: EntityOut | None
    importance: float
    expires_at: str | None
    created_at: str
    updated_at: str
    namespace: list[str] | None = None
    key: str | None = None

    @classmethod
    def of(cls, memory: MemoryObject) -> AgentMemoryOut:
        from agent_memory.domain.memory_objects import format_timestamp

        return cls(
            id=memory.id,
            category=memory.category,
            content=memory.content,
            metadata=memory.metadata,
            entity=EntityOut.of(memory.entity) if memory.entity else None,
            importance=memory.importance,
            expires_at=(
                format_timestamp(memory.expires_at_ms) if memory.expires_at_ms is not None else None
            ),
            created_at=format_timestamp(memory.created_at_ms),
            updated_at=format_timestamp(memory.updated_at_ms),
            namespace=list(memory.namespace) if memory.namespace is not None else None,
            key=memory.key,
        )


class AgentMemoryList(ListOf[AgentMemoryOut]):
    pass


class DeletedAgentMemory(Answer):
    id: str
    object: Literal["agent_memory"] = "agent_memory"
    deleted: Literal[True] = True
