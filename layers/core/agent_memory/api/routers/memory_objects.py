"""Agent memories (API.md, "Agent memories (seed 004)"): any user of the organization; a
namespaced memory its creator alone (ADR 0082)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Query

from agent_memory.api.contracts.memory_objects import (
    AgentMemoryList,
    AgentMemoryOut,
    CategoryName,
    CreateAgentMemory,
    DeletedAgentMemory,
    Label,
    RecallAgentMemories,
    UpdateAgentMemory,
)
from agent_memory.api.deps import CallerDep, ServicesDep, run
from agent_memory.domain.bounds import (
    DEFAULT_MEMORY_PAGE,
    MAX_MEMORY_PAGE,
    MAX_NAMESPACE_DEPTH,
    MAX_NAMESPACE_KEY_CHARS,
)

if TYPE_CHECKING:
    # The rules load with the services: a family function's cold start stays cheap.
    from agent_memory.domain.memory_objects import MemoryPage

router = APIRouter(prefix="/v1/agent_memories", tags=["agent memories"])


def _page(page: MemoryPage) -> AgentMemoryList:
    return AgentMemoryList(
        data=[AgentMemoryOut.of(m) for m in page.memories], has_more=page.has_more
    )


@router.post("", status_code=201)
async def create_agent_memory(
    body: CreateAgentMemory, caller: CallerDep, svc: ServicesDep
) -> AgentMemoryOut:
    memory = await run(svc, svc.memory_objects.create, caller, body.to_domain())
    return AgentMemoryOut.of(memory)


@router.get("")
async def list_agent_memories(
    caller: CallerDep,
    svc: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=MAX_MEMORY_PAGE)] = DEFAULT_MEMORY_PAGE,
    starting_after: Annotated[
        str | None,
        Query(pattern=r"^mem_[0-9a-z]{1,64}$", description="A memory id (a position)"),
    ] = None,
    category: CategoryName | None = None,
    entity: Annotated[
        str | None, Query(min_length=1, max_length=255, description="An entity id")
    ] = None,
    namespace: Annotated[
        list[Label] | None,
        Query(
            max_length=MAX_NAMESPACE_DEPTH,
            description="A namespace prefix, one label per parameter "
            "(`?namespace=users&namespace=u1`): the caller's namespaced memories under it, in "
            "order of namespace and key",
        ),
    ] = None,
    key: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_NAMESPACE_KEY_CHARS,
            description="With `namespace`: the memory of exactly that namespace and key",
        ),
    ] = None,
) -> AgentMemoryList:
    """Unexpired memories, newest first (with `namespace`, in order of namespace and key)."""
    page = await run(
        svc,
        svc.memory_objects.list_memories,
        caller,
        limit=limit,
        starting_after=starting_after,
        category=category,
        entity_id=entity,
        namespace=namespace,
        key=key,
    )
    return _page(page)


@router.post("/recall")
async def recall_agent_memories(
    body: RecallAgentMemories, caller: CallerDep, svc: ServicesDep
) -> AgentMemoryList:
    """Unexpired memories, highest importance first, ties newest first; with `query`,
    closest in meaning first, ties by importance."""
    page = await run(
        svc,
        svc.memory_objects.recall,
        caller,
        limit=body.limit,
        entity_id=body.entity,
        query=body.query,
        namespace=body.namespace,
    )
    return _page(page)


@router.get("/{memoryId}")
async def get_agent_memory(memoryId: str, caller: CallerDep, svc: ServicesDep) -> AgentMemoryOut:
    return AgentMemoryOut.of(await run(svc, svc.memory_objects.get, caller, memoryId))


@router.patch("/{memoryId}")
async def update_agent_memory(
    memoryId: str, body: UpdateAgentMemory, caller: CallerDep, svc: ServicesDep
) -> AgentMemoryOut:
    """Only the fields sent change; `updated_at` moves, `created_at` stays."""
    memory = await run(svc, svc.memory_objects.update, caller, memoryId, body.to_patch())
    return AgentMemoryOut.of(memory)


@router.delete("/{memoryId}")
async def delete_agent_memory(
    memoryId: str, caller: CallerDep, svc: ServicesDep
) -> DeletedAgentMemory:
    await run(svc, svc.memory_objects.delete, caller, memoryId)
    return DeletedAgentMemory(id=memoryId)
