"""Semantic recall: the past messages closest in meaning to a turn's new message, with the
messages around them. The index holds embeddings and ids only; messages are indexed in the
background in batches (ADR 0074). The newest messages saved and not indexed yet (the user's
threads' tails, `RecallTails`) are embedded on the turn, a few at most, and ranked beside
the index's hits, so what was just said is recallable at once (ADR 0084).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_memory.domain import recall as rules
from agent_memory.domain import recall_ranking as ranking
from agent_memory.domain.errors import Unavailable
from agent_memory.domain.threads import Message, RecalledWindow, Thread
from agent_memory.persistence.recall_pending import RecallTails, Tail
from agent_memory.persistence.threads import ThreadRepository
from agent_memory.ports.vectors import (
    MAX_DELETE_BATCH,
    MAX_PUT_BATCH,
    MAX_TOP_K,
    Embedder,
    EmbeddingFailure,
    Vector,
    VectorIndex,
    VectorIndexFailure,
    VectorRecord,
    VectorScope,
)
from agent_memory.service.learning_pools import PoolKind

log = logging.getLogger(__name__)

RECALL_KIND: PoolKind = "thread-recall"
# Messages embedded per embedder call (the local model's batch, Bedrock's one text a call).
EMBED_BATCH = 64
# Vectors of unindexed messages a process keeps, so that consecutive turns embed each once.
TAIL_CACHE = 2048
# A tail row saved this long before the user's newest one is indexed by now (the idle flush
# indexes a thread 5 to 20 minutes after its last save): deleted without a read.
STALE_TAIL_MS = 60 * 60 * 1000


@dataclass
class RecallTimings:
    """Where a recall's time went (ms), for benchmarks."""

    embed_ms: float = 0.0
    query_ms: float = 0.0
    read_ms: float = 0.0
    rerank_ms: float = 0.0
    texts_read: int = 0


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


@dataclass(eq=False)
class RecallService:
    repo: ThreadRepository
    embedder: Embedder
    index: VectorIndex
    tails: RecallTails | None = None
    _tail_vectors: OrderedDict[str, Vector] = field(default_factory=OrderedDict, init=False)
    _tail_lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def recall(
        self,
        thread: Thread,
        seq: int,
        options: Mapping[str, Any],
        message: str | None,
        recent: Sequence[Message],
        timings: RecallTimings | None = None,
    ) -> list[RecalledWindow]:
        """The context's `recalled`, best first, none of `recent` (`seq`: messages ever saved)."""
        settings = rules.settings_of(options)
        if settings is None or message is None or not message.strip():
            return []
        timings = timings or RecallTimings()
        started = time.perf_counter()
        try:
            vector = self.embedder.embed([rules.embedding_text(message)])[0]
        except EmbeddingFailure as failure:
            # The turn goes on without it.
            log.warning("semantic recall skipped: %s: %s", self.embedder.model, failure)
            return []
        timings.embed_ms = _ms_since(started)
        # The last N are the thread's newest rows: none is older than seq - len(recent)
        # unless messages were removed, and those are caught by id below.
        recent_from = seq - len(recent) if recent else None
        wanted = rules.candidates_wanted(settings, len(recent), MAX_TOP_K)
        hits = self._nearest(thread, vector, wanted, settings.scope, timings)
        hits.extend(self._unindexed(thread, vector, settings.scope, recent_from))
        before, after = settings.before, settings.after
        ranked = self._reranked(thread, message, hits, (before, after), recent_from, timings)
        # A hit inside a better hit's window would only repeat its messages.
        kept = rules.distinct_hits(ranked, settings.top_k, before, after, thread.id, recent_from)
        windows = rules.windows(kept, before, after, thread.id, recent_from)
        return self._read(thread, windows, {m.id for m in recent}, timings)

    def _nearest(
        self, thread: Thread, vector: Vector, wanted: int, scope: str, timings: RecallTimings
    ) -> list[rules.Hit]:
        """The index's nearest messages of the thread's user and agent (or the thread)."""
        started = time.perf_counter()
        try:
            found = self.index.query(
                vector,
                wanted,
                org=thread.org_id,
                owner=thread.resource_id,
                group=thread.agent_id,
                thread=thread.id if scope == "thread" else None,
            )
        except VectorIndexFailure as failure:
            # The turn goes on with what is not indexed yet.
            log.warning("semantic recall's index skipped: %s", failure)
            found = []
        timings.query_ms = _ms_since(started)
        return [
            rules.Hit(parsed[0], parsed[1], hit.score)
            for hit in found
            if (parsed := rules.parse_key(hit.key)) is not None
            # The index's filter already holds; a vector of another user is never shown.
            and hit.scope.owner == thread.resource_id
            and hit.scope.org == thread.org_id
        ]

    def _unindexed(
        self, thread: Thread, vector: Vector, scope: str, recent_from: int | None
    ) -> list[rules.Hit]:
        """The user's newest messages the index lacks yet, scored against the query: the
        tails of the threads saved last (one Query of the user's tail rows, then a read
        position and the messages of each), embedded here."""
        tails = self.tails
        if tails is None:
            return []
        owner = (thread.org_id, thread.resource_id, thread.agent_id)
        rows = tails.of_user(*owner)
        newest = rows[0].at if rows else 0
        for stale in [r for r in rows if newest - r.at > STALE_TAIL_MS]:
            tails.forget(*owner, stale)
        rows = [r for r in rows if newest - r.at <= STALE_TAIL_MS]
        if scope == "thread":
            rows = [r for r in rows if r.thread_id == thread.id]
        texts: list[tuple[str, int, str]] = []
        room = rules.TAIL_MESSAGES
        for tail in rows[: rules.TAIL_THREADS]:
            found = self._tail_texts(thread, tails, tail, recent_from, room)
            texts.extend(found)
            room -= len(found)
            if room <= 0:
                break
        if not texts:
            return []
        try:
            vectors = self._tail_embedded([text for _, _, text in texts])
        except EmbeddingFailure as failure:
            log.warning("unindexed messages not recalled: %s: %s", self.embedder.model, failure)
            return []
        return rules.tail_hits(
            vector,
            [(t, seq, v) for (t, seq, _), v in zip(texts, vectors, strict=True)],
        )

    def _tail_texts(
        self, thread: Thread, tails: RecallTails, tail: Tail, recent_from: int | None, room: int
    ) -> list[tuple[str, int, str]]:
        """A tail's messages not indexed, as their vectors will embed them; the row is
        deleted once its messages are indexed or its thread is gone."""
        owner = (thread.org_id, thread.resource_id, thread.agent_id)
        position = self.repo.position(tail.thread_id, RECALL_KIND)
        if position >= tail.upto:
            tails.forget(*owner, tail)
            return []
        upto = tail.upto
        if tail.thread_id == thread.id and recent_from is not None:
            upto = min(upto, recent_from)  # the context's last N are shown anyway
        first, end = rules.tail_span(position, upto, room)
        if first >= end:
            return []
        read = self.repo.numbered(
            self._scoped(thread, tail.thread_id), max(0, first - 1), end, end - first + 1
        )
        if not read and self.repo.get(tail.thread_id) is None:
            tails.forget(*owner, tail)
            return []
        contents = {seq: m.content for seq, m in read}
        return [
            (tail.thread_id, seq, rules.embedding_input(contents.get(seq - 1), m.content))
            for seq, m in read
            if seq >= first and rules.embedded(m.role, m.content)
        ]

    def _tail_embedded(self, texts: list[str]) -> list[Vector]:
        """Vectors of the texts, those embedded on an earlier turn from memory."""
        with self._tail_lock:
            known = {t: self._tail_vectors[t] for t in texts if t in self._tail_vectors}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            made = self.embedder.embed(missing)
            with self._tail_lock:
                for text, vector in zip(missing, made, strict=True):
                    known[text] = vector
                    self._tail_vectors[text] = vector
                while len(self._tail_vectors) > TAIL_CACHE:
                    self._tail_vectors.popitem(last=False)
        return [known[t] for t in texts]

    def _reranked(
        self,
        thread: Thread,
        message: str,
        hits: list[rules.Hit],
        window: tuple[int, int],
        recent_from: int | None,
        timings: RecallTimings,
    ) -> list[rules.Hit]:
        """Dense candidates re-ranked with the lexical score of the text their vector embeds,
        those said by a person the new message names lifted."""
        candidates = rules.kept_hits(hits, thread.id, recent_from)
        started = time.perf_counter()
        texts = self.repo.messages_at(
            [(self._scoped(thread, t), seq) for t, seq in ranking.text_positions(candidates)]
        )
        contents = {key: m.content for key, m in texts.items()}
        present, inputs = ranking.lexical_inputs(candidates, contents)
        lexical = ranking.lexical_scores(message, inputs)
        ranked = ranking.hybrid(ranking.speaker_lifted(message, present, contents, window), lexical)
        timings.texts_read = len(texts)
        timings.rerank_ms = _ms_since(started)
        return ranked

    def _read(
        self,
        thread: Thread,
        windows: list[rules.Window],
        recent_ids: set[str],
        timings: RecallTimings,
    ) -> list[RecalledWindow]:
        """The messages of each window still stored, none of the context's last N."""
        started = time.perf_counter()
        recalled: list[RecalledWindow] = []
        threads: dict[str, Thread | None] = {thread.id: thread}
        for window in windows:
            owner = self._owned_thread(threads, window.thread_id, thread)
            if owner is None:
                continue
            count = window.last - window.first + 1
            read = self.repo.numbered(owner, window.first, window.last + 1, count)
            messages = rules.shown(window, read, recent_ids)
            if messages is not None:
                shown = tuple(messages)
                recalled.append(RecalledWindow(window.thread_id, shown, round(window.score, 6)))
        timings.read_ms = _ms_since(started)
        return recalled

    @staticmethod
    def _scoped(current: Thread, thread_id: str) -> Thread:
        """A candidate's thread, its ids only: windows check its owner."""
        return Thread(thread_id, current.org_id, current.agent_id, current.resource_id, None, 0)

    def _owned_thread(
        self, threads: dict[str, Thread | None], thread_id: str, current: Thread
    ) -> Thread | None:
        """A recalled thread of the same user and agent: a check behind the index's filter."""
        if thread_id not in threads:
            stored = self.repo.get(thread_id)
            other = stored.thread if stored is not None else None
            same = (
                other is not None
                and other.org_id == current.org_id
                and other.resource_id == current.resource_id
                and other.agent_id == current.agent_id
            )
            threads[thread_id] = other if same else None
        return threads[thread_id]

    def index_messages(self, thread: Thread, numbered: Sequence[tuple[int, Message]]) -> int:
        """Embed and put the messages in batches; how many vectors were put."""
        before: dict[int, str] = {}
        if numbered and numbered[0][0] > 0:
            first = numbered[0][0]
            previous = self.repo.numbered(thread, max(0, first - 1), first, 1)
            if previous:
                before[first] = previous[-1][1].content
        for (_, m), (seq, _) in itertools.pairwise(numbered):
            before[seq] = m.content
        wanted = [(seq, m) for seq, m in numbered if rules.embedded(m.role, m.content)]
        scope = VectorScope(thread.org_id, thread.resource_id, thread.agent_id, thread.id)
        records: list[VectorRecord] = []
        for start in range(0, len(wanted), EMBED_BATCH):
            chunk = wanted[start : start + EMBED_BATCH]
            vectors = self.embedder.embed(
                [rules.embedding_input(before.get(seq), m.content) for seq, m in chunk]
            )
            records.extend(
                VectorRecord(rules.vector_key(thread.id, seq), vector, scope)
                for (seq, _), vector in zip(chunk, vectors, strict=True)
            )
        for start in range(0, len(records), MAX_PUT_BATCH):
            self.index.put(records[start : start + MAX_PUT_BATCH])
        return len(records)

    def forget(self, thread: Thread, seqs: Sequence[int]) -> None:
        keys = [rules.vector_key(thread.id, seq) for seq in seqs]
        for start in range(0, len(keys), MAX_DELETE_BATCH):
            self.index.delete(keys[start : start + MAX_DELETE_BATCH])

    def forget_embedded(self, thread: Thread) -> None:
        """Remove every embedded message's vector; recall drops those a run in flight puts."""
        self.forget(thread, range(self.repo.position(thread.id, RECALL_KIND)))


# Agent memories share the index; any user of an organization may use its memories.
MEMORY_GROUP = "agent_memories"
# Score digits that count when ranking memories: closer than this, importance decides.
MEMORY_SCORE_DIGITS = 3


@dataclass(eq=False)
class MemoryRecall:
    """Agent memories by meaning: embedded when written, removed when deleted."""

    embedder: Embedder
    index: VectorIndex

    def remember(self, org_id: str, memory_id: str, content: str) -> None:
        """Put the content's vector; without an answering model the memory has none."""
        try:
            vector = self.embedder.embed([rules.embedding_text(content)])[0]
        except EmbeddingFailure as failure:
            log.warning("memory saved without its vector: %s: %s", self.embedder.model, failure)
            return
        scope = VectorScope(org_id, org_id, MEMORY_GROUP, "")
        try:
            self.index.put([VectorRecord(memory_id, vector, scope)])
        except VectorIndexFailure as failure:
            log.warning("memory saved without its vector: %s", failure)

    def forget(self, memory_id: str) -> None:
        """The memory is deleted already: a vector left behind finds no memory to show."""
        try:
            self.index.delete([memory_id])
        except VectorIndexFailure as failure:
            log.warning("a deleted memory's vector kept: %s", failure)

    def closest(self, org_id: str, query: str, count: int) -> list[tuple[str, float]]:
        """Ids and rounded scores, best first; 503 when the embedding model cannot answer."""
        try:
            vector = self.embedder.embed([rules.embedding_text(query)])[0]
        except EmbeddingFailure as failure:
            raise Unavailable(
                f"the embedding model {self.embedder.model} could not answer: {failure}"
            ) from None
        hits = self.index.query(
            vector, max(1, min(MAX_TOP_K, count)), org=org_id, owner=org_id, group=MEMORY_GROUP
        )
        return [
            (h.key, round(h.score, MEMORY_SCORE_DIGITS))
            for h in hits
            if h.scope.org == org_id and h.scope.group == MEMORY_GROUP
        ]
