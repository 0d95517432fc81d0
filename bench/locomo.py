"""Semantic recall on LoCoMo: the LoCoMo paper's retrieval recall through the
service's own recall path, against Okapi BM25 over the same turns.

Each of the 10 conversations is one user; each of its sessions a thread of that user with
one agent; every turn a message (speaker A as `user`, speaker B as `assistant`; a shared
image's caption appended as the turn's text shows it). The messages are saved, sealed and
embedded as the service does (`ThreadRepository`, `RecallService.index_messages`, the local
embedder, the in-process index). Each question is the new message of a turn on a fresh
thread of the same user (lastMessages 0, scope resource) and goes through
`RecallService.recall` for every `topK` x `messageRange`. Recall is the share of the
question's evidence turns (`evidence` dia_ids) among the returned messages (the recalled
ones and their range). `bm25_recall`: `bm25s` over the same turn texts under the same
rule (its best turns of the user, skipping one inside the window of a better one kept, until
`topK` windows of the same range within its session); `bm25_plain_recall`: its top `topK`
turns with the range, overlapping or not (the baseline before that rule).

Every weight and threshold of the ranking is chosen on conversations 0-4 (`tuning`);
conversations 5-9 (`held_out`) are the honest figure, reported beside the full set (`rows`),
each with BM25 under the same rules and per category.

The data set (CC BY-NC 4.0, evaluation only) is read from ../shared/bench-data, never
copied: `LOCOMO_PATH` overrides, `LOCOMO_CONVERSATIONS=2` runs a subset.
`LOCOMO_QUICK=1` re-scores from the vectors the last run cached (.cache/bench);
`LOCOMO_CACHE=<name>` re-scores from a named cache file only, without its model (the
vectors of an embedder since replaced, for comparison).

    python -m bench.locomo
"""

from __future__ import annotations

import bisect
import json
import os
import re
import resource
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from agent_memory.adapters.vector_index import InProcessVectorIndex
from agent_memory.domain import recall as rules
from agent_memory.domain.memory_options import effective_options
from agent_memory.domain.recall import CANDIDATES
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence.threads import ThreadRepository
from agent_memory.ports import KeyRange, Page, Record
from agent_memory.ports.store import Query, page_of
from agent_memory.service.recall import RecallService, RecallTimings
from bench.cost_model import cost_per_million_turns_recall
from bench.vector_cache import CachedEmbedder
from tests.support.in_memory import FakeCipher, InMemoryStore

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PATH = ROOT.parent / "shared" / "bench-data" / "locomo" / "locomo10.json"
TOP_KS = (5, 10, 25)
RANGES = (0, 1, 2)
# Conversations the ranking's weights are chosen on; the others are held out.
TUNING = frozenset(range(5))
ORG = "org_locomo"
AGENT = "agt_locomo"
_SESSION = re.compile(r"^session_(\d+)$")


def _path() -> Path:
    configured = os.environ.get("LOCOMO_PATH")
    if configured:
        return Path(configured)
    for candidate in (DEFAULT_PATH, Path("/work/shared/bench-data/locomo/locomo10.json")):
        if candidate.exists():
            return candidate
    return DEFAULT_PATH


class ReadOnlyStore(InMemoryStore):
    """The in-memory store, read through a per-partition sorted index once the conversations
    are saved (`freeze`): the benchmark reads each stored message hundreds of times, and
    the plain store copies every row it returns and scans every row per Query. Rows read
    are shared, not copied (the recall path never changes a record it reads); a write
    thaws it."""

    def __init__(self) -> None:
        super().__init__()
        self._sorted: dict[str, tuple[list[str], list[Record]]] | None = None

    def freeze(self) -> None:
        parts: dict[str, list[Record]] = defaultdict(list)
        for row in self.rows.values():
            parts[str(row["pk"])].append(row)
        self._sorted = {}
        for pk, rows in parts.items():
            rows.sort(key=lambda r: str(r["sk"]))
            self._sorted[pk] = ([str(r["sk"]) for r in rows], rows)

    def write(self, actions: Any) -> None:
        self._sorted = None
        super().write(actions)

    def get(self, pk: str, sk: str) -> Record | None:
        if self._sorted is None:
            return super().get(pk, sk)
        self.requests += 1
        return self.rows.get((pk, sk))

    def get_many(self, keys: Any) -> list[Record]:
        if self._sorted is None:
            return super().get_many(keys)
        self.requests += 1
        return [self.rows[k] for k in dict.fromkeys(keys) if k in self.rows]

    def page(self, query: Query) -> Page:
        if self._sorted is None or query.newest_first or query.after:
            return super().page(query)
        self.requests += 1
        sks, rows = self._sorted.get(query.pk, ([], []))
        low, high = _bounds(query.key_range)
        first = bisect.bisect_left(sks, low) if low is not None else 0
        last = bisect.bisect_right(sks, high) if high is not None else len(sks)
        found = rows[first:last]
        if query.key_range is not None and query.key_range.prefix is not None:
            found = [r for r in found if str(r["sk"]).startswith(query.key_range.prefix)]
        if query.limit is not None:
            found = found[: query.limit + 1]
        return page_of(list(found), query.limit, len(found))


def _bounds(key_range: KeyRange | None) -> tuple[str | None, str | None]:
    if key_range is None:
        return None, None
    if key_range.prefix is not None:
        return key_range.prefix, None
    return key_range.low, key_range.high


class RememberingCipher(FakeCipher):
    """The fake cipher, opening each (blob, scope, row) once."""

    def __init__(self) -> None:
        super().__init__()
        self._opened: dict[tuple[bytes, str, str], str] = {}

    def open(self, blob: bytes, *, scope: Any, row: str) -> str:
        key = (bytes(blob), json.dumps(dict(scope), sort_keys=True), row)
        if key not in self._opened:
            self._opened[key] = super().open(blob, scope=scope, row=row)
        return self._opened[key]


def turn_text(turn: dict[str, Any]) -> str:
    """What a turn's message says, as a transcript of two people saves it: the speaker's
    name, the text, and the caption of an image it shares."""
    text = str(turn.get("text") or "")
    caption = turn.get("blip_caption")
    said = f"{text} [shares {caption}]" if caption else text
    return f"{turn.get('speaker')}: {said}"


class Remembering:
    """The embedder, answering a text it embedded before from memory: each question is
    asked under 9 configurations, and its embedding is timed once (the first)."""

    def __init__(self, embedder: CachedEmbedder) -> None:
        self._embedder = embedder
        self._seen: dict[str, list[float]] = {}
        self.model = embedder.model
        self.dimension = embedder.dimension

    def embed(self, texts: Any) -> list[list[float]]:
        missing = [t for t in texts if t not in self._seen]
        if len(missing) > 1:
            return self._embedder.embed(texts)
        for text, vector in zip(missing, self._embedder.embed(missing), strict=True):
            self._seen[text] = vector
        return [self._seen[t] for t in texts]


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]]]]:
    found = []
    for name, turns in conversation.items():
        match = _SESSION.match(name)
        if match and isinstance(turns, list) and turns:
            found.append((int(match.group(1)), turns))
    return sorted(found)


class Loaded:
    """One conversation saved as one user's threads."""

    def __init__(self, number: int, sample: dict[str, Any], repo: ThreadRepository) -> None:
        self.number = number
        self.split = "tuning" if number in TUNING else "held_out"
        self.user = f"usr_locomo_{number}"
        conversation = sample["conversation"]
        speaker_a = conversation.get("speaker_a")
        self.qa = sample["qa"]
        # dia_id -> (thread id, seq); per thread, its turns' dia_ids by seq.
        self.where: dict[str, tuple[str, int]] = {}
        self.threads: list[tuple[Thread, int]] = []
        self.turns: list[tuple[str, int, str, str]] = []
        self.dia_of: dict[str, str] = {}
        for session, turns in _sessions(conversation):
            thread = Thread(
                id=f"th_{number}_{session:03d}",
                org_id=ORG,
                agent_id=AGENT,
                resource_id=self.user,
                title=None,
                created_at=session,
            )
            repo.create(thread)
            messages = []
            for seq, turn in enumerate(turns):
                text = turn_text(turn)
                role = "user" if turn.get("speaker") == speaker_a else "assistant"
                message_id = f"msg_{number}_{session}_{seq}"
                messages.append(Message(message_id, role, text, session))
                self.dia_of[message_id] = str(turn.get("dia_id"))
                self.where[str(turn.get("dia_id"))] = (thread.id, seq)
                self.turns.append((thread.id, seq, str(turn.get("dia_id")), text))
            # A save is at most 50 messages (one transaction), as the API saves.
            for start in range(0, len(messages), 50):
                repo.append(thread, start, messages[start : start + 50], session)
            self.threads.append((thread, len(messages)))
        self.question_thread = Thread(
            id=f"th_{number}_questions",
            org_id=ORG,
            agent_id=AGENT,
            resource_id=self.user,
            title=None,
            created_at=10_000,
        )
        repo.create(self.question_thread)


def _evidence(question: dict[str, Any], where: dict[str, tuple[str, int]]) -> list[str]:
    ids: list[str] = []
    for raw in question.get("evidence") or []:
        # Some evidence fields hold several ids ("D8:6; D9:17").
        ids.extend(part.strip() for part in re.split(r"[;,]", str(raw)) if part.strip())
    return [i for i in ids if i in where]


def _share(evidence: list[str], returned: set[str]) -> float:
    return sum(1 for e in evidence if e in returned) / len(evidence)


def _bm25(loaded: list[Loaded]) -> dict[str, Any]:
    import bm25s  # type: ignore[import-untyped]

    indexes = {}
    for conversation in loaded:
        corpus = [text for _, _, _, text in conversation.turns]
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False
        )
        indexes[conversation.user] = retriever
    return indexes


def _bm25_returned(
    conversation: Loaded,
    retriever: Any,
    question: str,
    top_k: int,
    window: int,
    distinct: bool = True,
) -> set[str]:
    """The turns BM25 returns under the service's own rule: its best turns in rank order,
    skipping a turn that lies in the window of a better one kept, until `top_k` windows
    (`domain/recall.distinct_hits`), each with `window` turns either side in its session."""
    import bm25s

    tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
    k = min(CANDIDATES, len(conversation.turns))
    try:
        found, scores = retriever.retrieve(tokens, k=k, show_progress=False)
    except (ValueError, IndexError):
        return set()
    ranked = []
    for index, score in zip(found[0], scores[0], strict=True):
        thread_id, seq, _, _ = conversation.turns[int(index)]
        ranked.append(rules.Hit(thread_id, seq, float(score)))
    kept = (
        rules.distinct_hits(ranked, top_k, window, window, "", None) if distinct else ranked[:top_k]
    )
    by_position = {(t, s): d for t, s, d, _ in conversation.turns}
    returned = set()
    for hit in kept:
        for near in range(hit.seq - window, hit.seq + window + 1):
            dia = by_position.get((hit.thread_id, near))
            if dia is not None:
                returned.add(dia)
    return returned


RANKING = (
    "hybrid: the 100 nearest (cosine; each message embedded with the one before "
    "it) re-ranked by cosine + 0.4 x BM25 over them, normalised, BM25 reading the "
    "same text as the vector (the message with the one before it, words stemmed), "
    "+ 0.2 x the better fused score of a candidate's neighbours among them, + 0.1 for a "
    "candidate said by a person the question names (its speaker label) when the range is "
    "even; topK windows "
    "that each show something new (a hit inside a better hit's window skipped), "
    "BM25 under the same rule"
)


class Sums:
    """What one `topK` x `messageRange` configuration found over all questions."""

    def __init__(self) -> None:
        self.n = 0
        self.recall = self.bm25 = self.bm25_plain = 0.0
        self.turns = self.bm25_turns = 0
        self.by_category: dict[str, list[float]] = defaultdict(list)
        self.bm25_by_category: dict[str, list[float]] = defaultdict(list)

    def row(self, top_k: int, window: int) -> dict[str, Any]:
        n = self.n
        return {
            "topK": top_k,
            "messageRange": window,
            "questions": n,
            "turns_returned": round(self.turns / n, 2),
            "recall": round(100 * self.recall / n, 1),
            "bm25_recall": round(100 * self.bm25 / n, 1),
            "bm25_turns_returned": round(self.bm25_turns / n, 2),
            "bm25_plain_recall": round(100 * self.bm25_plain / n, 1),
            "by_category": {
                c: round(100 * statistics.fmean(v), 1) for c, v in sorted(self.by_category.items())
            },
            "bm25_by_category": {
                c: round(100 * statistics.fmean(v), 1)
                for c, v in sorted(self.bm25_by_category.items())
            },
        }


class Scoring:
    """Every question asked under every configuration, with the first one's timings."""

    def __init__(self, recall: RecallService, bm25: dict[str, Any]) -> None:
        self._recall = recall
        self._bm25 = bm25
        # (split, topK, range): split "all", "tuning" or "held_out".
        self.sums: dict[tuple[str, int, int], Sums] = defaultdict(Sums)
        self.timings: list[RecallTimings] = []

    def ask(self, conversation: Loaded, question: dict[str, Any]) -> None:
        evidence = _evidence(question, conversation.where)
        if not evidence:
            return
        text = str(question["question"])
        retriever = self._bm25[conversation.user]
        for top_k in TOP_KS:
            for window in RANGES:
                options = effective_options(
                    {"lastMessages": 0, "semanticRecall": {"topK": top_k, "messageRange": window}}
                )
                timings = RecallTimings()
                recalled = self._recall.recall(
                    conversation.question_thread, 0, options, text, [], timings
                )
                if top_k == TOP_KS[0] and window == RANGES[0]:
                    self.timings.append(timings)
                returned = {conversation.dia_of[m.id] for g in recalled for m in g.messages}
                lexical = _bm25_returned(conversation, retriever, text, top_k, window)
                plain = _bm25_returned(conversation, retriever, text, top_k, window, False)
                got = _share(evidence, returned)
                for split in ("all", conversation.split):
                    s = self.sums[(split, top_k, window)]
                    s.n += 1
                    s.turns += len(returned)
                    s.recall += got
                    s.bm25 += _share(evidence, lexical)
                    s.bm25_turns += len(lexical)
                    s.bm25_plain += _share(evidence, plain)
                    s.by_category[str(question.get("category"))].append(got)
                    s.bm25_by_category[str(question.get("category"))].append(
                        _share(evidence, lexical)
                    )

    def medians(self) -> dict[str, float]:
        def median(values: list[float], digits: int) -> float:
            return round(statistics.median(values), digits)

        t = self.timings
        return {
            "query_embedding_ms_median": median([x.embed_ms for x in t], 2),
            "index_query_ms_median": median([x.query_ms for x in t], 3),
            "message_read_ms_median": median([x.read_ms for x in t], 3),
            "rerank_ms_median": median([x.rerank_ms for x in t], 3),
            # Messages read per turn for the re-ranking: the candidates and their predecessors.
            "texts_read_mean": round(statistics.fmean(x.texts_read for x in t), 1),
        }


def _conversations() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(_path().read_text())
    limit = int(os.environ.get("LOCOMO_CONVERSATIONS", "0") or 0)
    return data[:limit] if limit else data


def _embedder() -> CachedEmbedder:
    """Every run saves its vectors in .cache/bench; LOCOMO_QUICK=1 re-scores from them,
    LOCOMO_CACHE=<name> from that file alone."""
    named = os.environ.get("LOCOMO_CACHE")
    if named:
        return CachedEmbedder("locomo", reuse=True, cache=named, model=None)
    return CachedEmbedder("locomo", reuse=os.environ.get("LOCOMO_QUICK") == "1")


def _split(scoring: Scoring, split: str, loaded: list[Loaded]) -> dict[str, Any]:
    return {
        "conversations": [c.number for c in loaded if c.split == split],
        "rows": [s.row(k, w) for (name, k, w), s in sorted(scoring.sums.items()) if name == split],
    }


def run() -> dict[str, Any]:
    store = ReadOnlyStore()
    repo = ThreadRepository(store, RememberingCipher())
    embedder = _embedder()
    started = time.perf_counter()
    embedder.load()
    load_s = time.perf_counter() - started
    recall = RecallService(repo, Remembering(embedder), InProcessVectorIndex(embedder.dimension))
    loaded = [Loaded(n, sample, repo) for n, sample in enumerate(_conversations())]
    messages = sum(count for c in loaded for _, count in c.threads)
    started = time.perf_counter()
    for conversation in loaded:
        for thread, count in conversation.threads:
            recall.index_messages(thread, repo.numbered(thread, 0, count, count))
    index_s = time.perf_counter() - started
    store.freeze()
    scoring = Scoring(recall, _bm25(loaded))
    for conversation in loaded:
        for question in conversation.qa:
            scoring.ask(conversation, question)
    embedder.save()
    return {
        "locomo": {
            "conversations": len(loaded),
            "messages": messages,
            "embedder": embedder.model,
            "ranking": RANKING,
            "rows": [
                s.row(k, w) for (name, k, w), s in sorted(scoring.sums.items()) if name == "all"
            ],
            "tuning": _split(scoring, "tuning", loaded),
            "held_out": _split(scoring, "held_out", loaded),
            "model_load_s": round(load_s, 2),
            "embedding_ms_per_message": round(1000 * index_s / max(1, messages), 2),
            **scoring.medians(),
            "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        },
        "cost": cost_per_million_turns_recall(),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
