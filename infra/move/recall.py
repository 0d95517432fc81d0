"""Semantic recall on the target of a move (docs/adr/0085): vectors are derived from content
and never travel in an archive, so the import embeds again, through the target's own recall
services and embedding model, what the source had embedded.

- Agent memories (seed 004): each memory's base row, once written, is read back and
  remembered (`MemoryRecall.remember`, as when it was created).
- Thread messages (seed 003): a thread's recall read position moves as a row, so the
  target's background indexing goes on from it; the messages below it, which the source's
  index held, are indexed once the import's rows are all written (`index_messages`, as
  the background step indexes them). Messages above it are the thread's unindexed tail,
  recalled on the turn and indexed later, as on the source.

A vector's key is its memory's id or its message's position, so an import run again puts
the same vectors over themselves: nothing is duplicated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agent_memory.domain.memory_objects import is_memory_id
from agent_memory.persistence.keys import position_sk, thread_pk
from agent_memory.persistence.memory_objects import MemoryObjectRepository, memories_pool
from agent_memory.persistence.threads import ThreadRepository
from agent_memory.service.recall import RECALL_KIND, MemoryRecall, RecallService

# Messages read (and opened) at once while a thread is indexed again.
READ_MESSAGES = 500


class RecallRebuilt:
    """Follows an import's written rows and puts the vectors they call for."""

    def __init__(
        self,
        threads: ThreadRepository,
        memories: MemoryObjectRepository,
        recall: RecallService,
    ) -> None:
        self._threads = threads
        self._memories = memories
        self._recall = recall
        self._semantic = MemoryRecall(recall.embedder, recall.index)
        # The memory pools' partitions of the archive's organizations -> the organization.
        self._pools: dict[str, str] = {}
        # Thread id -> messages below this position were embedded on the source.
        self._indexed: dict[str, int] = {}
        self.memories = 0
        self.messages = 0

    def of_archive(self, organizations: Iterable[str]) -> RecallRebuilt:
        """This, following the rows of an archive of `organizations`."""
        self._pools = {memories_pool(org).pk: org for org in organizations}
        return self

    def written(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Rows just written: memories embedded now, threads' positions kept for `finish`."""
        for record in records:
            pk, sk = str(record["pk"]), str(record["sk"])
            org = self._pools.get(pk)
            if org is not None and is_memory_id(sk) and not record.get("copy"):
                memory = self._memories.get(org, sk)
                if memory is not None:
                    self._semantic.remember(org, memory.id, memory.content)
                    self.memories += 1
            elif pk.startswith(thread_pk("")) and sk == position_sk(RECALL_KIND):
                self._indexed[pk.removeprefix(thread_pk(""))] = int(record["position"])

    def finish(self) -> None:
        """Index each thread's messages below its moved read position."""
        for thread_id, position in self._indexed.items():
            stored = self._threads.get(thread_id)
            if stored is None:
                continue
            after = 0
            while after < position:
                numbered = self._threads.numbered(stored.thread, after, position, READ_MESSAGES)
                if not numbered:
                    break
                self.messages += self._recall.index_messages(stored.thread, numbered)
                after = numbered[-1][0] + 1
