"""Read positions (docs/architecture.md, glossary): how far one pool's learning has read one
conversation it learns from, in one row shape for every such pool.

The row sits in the pool's own partition under `LEARNPOS#<name>`: an agent's position in one
of its sessions (`AGENT#<agentId>`, the session id), a Bot memory pool's in one of its chats
(`BOTMEM#<botId>#<orgId>`, the chat id), a thread's background step in its thread
(`THREAD#<threadId>`, the step's kind). It holds a `ReadMark`: `position` (every item
through it is read), `held` (items passed over while their Turn was open, read once it ends)
and `moves`. Every move is conditional on the `moves` its writer read (`READ_POSITION`), so
the same evidence is never applied twice. "LEARNPOS#" sorts outside every Query of a pool's
entries (persistence/keys.py). A session's own memory keeps its position as `processed`
(seed 000), moved with the memory's revision.
"""

from __future__ import annotations

from agent_memory.domain.memory_bot import ReadMark
from agent_memory.persistence.keys import READ_POSITION, position_sk
from agent_memory.ports import Put, Record, Store, Update
from agent_memory.ports.store import count_is


def mark_of(row: Record | None) -> ReadMark:
    """The mark a position row holds (nothing read yet when there is no row)."""
    if row is None:
        return ReadMark()
    held = tuple(sorted(int(h) for h in row.get("held") or ()))
    return ReadMark(int(row["position"]), held, int(row["moves"]))


def _fields(mark: ReadMark, now_ms: int) -> Record:
    return {
        "type": "read-position",
        "position": mark.position,
        "held": list(mark.held),
        "moves": mark.moves,
        "updatedAt": now_ms,
    }


def position_move(pk: str, name: str, before: ReadMark, after: ReadMark, now_ms: int) -> Update:
    """Move the position to `after`, conditional on it still being `before` (its moves)."""
    condition = count_is("moves", before.moves, name=READ_POSITION)
    return Update(pk, position_sk(name), set=_fields(after, now_ms), condition=condition)


def advanced(before: ReadMark, upto: int) -> ReadMark:
    """The mark once every item through `upto` is read (nothing held)."""
    return ReadMark(upto, before.held, before.moves + 1)


def position_put(pk: str, name: str, mark: ReadMark, now_ms: int) -> Put:
    """A new position (a Fork's agent position starts after its copied history)."""
    return Put({"pk": pk, "sk": position_sk(name), **_fields(mark, now_ms)})


def read_mark(store: Store, pk: str, name: str) -> ReadMark:
    """The mark of the position `name` in partition `pk`, read from the store."""
    return mark_of(store.get(pk, position_sk(name)))
