"""Semantic recall (seed 003 "Long-term recall"): which past messages a turn gets back.

Pure rules over the nearest vectors the index answers: a message's vector key, which
messages are embedded, which hits are left out (the last N already in the context), the
window of context around each hit (`messageRange` `{before, after}`), and the merging of
windows that touch in one thread. The service fetches and opens only the messages the
windows name.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.domain.threads import Message

# Roles whose content is conversation (tool results and system text are not recalled).
EMBEDDED_ROLES = frozenset({"user", "assistant"})
# Characters embedded from one message: the local model reads 256 tokens, Titan v2 8,192
# tokens (about 50,000 characters); past that a message is embedded by its opening.
MAX_EMBEDDED_CHARS = 8_000
_KEY_SEPARATOR = "#"


@dataclass(frozen=True)
class RecallSettings:
    top_k: int
    before: int
    after: int
    # "resource": every thread of the user with this agent; "thread": this one only.
    scope: str


@dataclass(frozen=True)
class Hit:
    thread_id: str
    seq: int
    score: float


@dataclass(frozen=True)
class Window:
    """Messages `first`..`last` (positions, inclusive) of a thread, recalled for `hits`."""

    thread_id: str
    first: int
    last: int
    score: float
    hits: tuple[int, ...]


def settings_of(options: Mapping[str, Any]) -> RecallSettings | None:
    """The effective `semanticRecall` option of a version, or None when it is off."""
    recall = options["semanticRecall"]
    if not recall["enabled"]:
        return None
    window = recall["messageRange"]
    return RecallSettings(
        top_k=int(recall["topK"]),
        before=int(window["before"]),
        after=int(window["after"]),
        scope=str(recall["scope"]),
    )


def vector_key(thread_id: str, seq: int) -> str:
    """A message's key in the vector index: its thread and position, no text."""
    return f"{thread_id}{_KEY_SEPARATOR}{seq:010d}"


def parse_key(key: str) -> tuple[str, int] | None:
    """The thread and position a message key names; None for another kind of key."""
    thread_id, _, seq = key.rpartition(_KEY_SEPARATOR)
    if not thread_id or not seq.isdigit():
        return None
    return thread_id, int(seq)


def embedded(role: str, content: str) -> bool:
    """Whether a saved message is embedded for recall: conversation text, not blank."""
    return role in EMBEDDED_ROLES and bool(content.strip())


def embedding_text(content: str) -> str:
    """What is embedded of a message's content (its opening, at most MAX_EMBEDDED_CHARS)."""
    return content[:MAX_EMBEDDED_CHARS]


def candidates_wanted(settings: RecallSettings, last_messages: int, max_top_k: int) -> int:
    """How many nearest vectors to ask for: CANDIDATES for the lexical re-ranking, and at
    least topK plus room for the hits among the last N (left out), within the index's
    per-query limit."""
    return max(1, min(max_top_k, max(CANDIDATES, settings.top_k + max(0, last_messages))))


def kept_hits(hits: Iterable[Hit], current_thread: str, recent_from: int | None) -> list[Hit]:
    """The hits, best first and each once, that are not among the current thread's last N
    (positions at or after `recent_from`; None when the context holds no recent message)."""
    kept: list[Hit] = []
    seen: set[tuple[str, int]] = set()
    for hit in sorted(hits, key=lambda h: -h.score):
        if (hit.thread_id, hit.seq) in seen:
            continue
        if recent_from is not None and hit.thread_id == current_thread and hit.seq >= recent_from:
            continue
        seen.add((hit.thread_id, hit.seq))
        kept.append(hit)
    return kept


def _span(
    hit: Hit, before: int, after: int, current_thread: str, recent_from: int | None
) -> tuple[int, int]:
    """The positions a hit's window covers: `before` and `after` around it, cut short of the
    current thread's last N."""
    last = hit.seq + after
    if recent_from is not None and hit.thread_id == current_thread:
        last = min(last, recent_from - 1)
    return max(0, hit.seq - before), last


def distinct_hits(
    ranked: Iterable[Hit],
    top_k: int,
    before: int,
    after: int,
    current_thread: str,
    recent_from: int | None,
) -> list[Hit]:
    """The best hits, in rank order, until `top_k` of them show something new: a hit whose
    message already lies in the window of a better hit kept (same thread) is shown anyway
    and is no recall of its own, so it is skipped and the next one taken."""
    kept: list[Hit] = []
    covered: dict[str, list[tuple[int, int]]] = {}
    for hit in ranked:
        if len(kept) == top_k:
            break
        spans = covered.setdefault(hit.thread_id, [])
        if any(first <= hit.seq <= last for first, last in spans):
            continue
        spans.append(_span(hit, before, after, current_thread, recent_from))
        kept.append(hit)
    return kept


def windows(
    hits: Sequence[Hit],
    before: int,
    after: int,
    current_thread: str,
    recent_from: int | None,
) -> list[Window]:
    """One window per hit (`before` messages before it, `after` after), windows of one
    thread that overlap or touch merged (the best score stays), the current thread's
    windows cut short of its last N; best score first."""
    by_thread: dict[str, list[tuple[int, int, float, int]]] = {}
    for hit in hits:
        first, last = _span(hit, before, after, current_thread, recent_from)
        by_thread.setdefault(hit.thread_id, []).append((first, last, hit.score, hit.seq))
    merged: list[Window] = []
    for thread_id, spans in by_thread.items():
        for first, last, score, seq in sorted(spans):
            touched = merged[-1] if merged and merged[-1].thread_id == thread_id else None
            if touched is not None and first <= touched.last + 1:
                merged[-1] = Window(
                    thread_id,
                    touched.first,
                    max(touched.last, last),
                    max(touched.score, score),
                    (*touched.hits, seq),
                )
            else:
                merged.append(Window(thread_id, first, last, score, (seq,)))
    merged.sort(key=lambda w: (-w.score, w.thread_id, w.first))
    return merged


def shown(
    window: Window, found: Sequence[tuple[int, Message]], recent_ids: Collection[str]
) -> list[Message] | None:
    """The messages of a window to show: those found in the store, none of the context's
    last N (by id); None when no hit of the window still exists (its message was deleted
    after it was embedded)."""
    positions = {seq for seq, _ in found}
    if not any(seq in positions for seq in window.hits):
        return None
    messages = [m for _, m in found if m.id not in recent_ids]
    return messages or None


# The nearest vectors re-ranked lexically (all the index answers in one query: S3 Vectors'
# top-K limit). Measured on LoCoMo (ADR 0067).
CANDIDATES = 100
_BM25_K1 = 1.5
# Length normalisation kept weak: a longer turn (a message with the one before it) is not a
# worse match in a dialogue. Chosen on LoCoMo's conversations 0-4 (0.25..0.75; ADR 0084).
_BM25_B = 0.3
_WORD = re.compile(r"[a-z0-9]+")
# Words too common to tell messages apart.
_COMMON = (
    "a an the and or but of to in on at for with is are was were be been being do does did "
    "i you he she it we they me my your his her its our their what when where who whom "
    "which why how that this these those as by from about into over after before than then "
    "so if not no yes can could would should will shall may might must have has had"
)
_STOPWORDS = frozenset(_COMMON.split())


def embedding_input(previous: str | None, content: str) -> str:
    """What is embedded for a saved message: the message before it, then the message, so a
    short answer ("Yes, in May!") carries what it answers. Both openings, bounded."""
    text = embedding_text(content)
    if previous:
        return f"{embedding_text(previous)[: MAX_EMBEDDED_CHARS // 2]}\n{text}"
    return text


# Suffixes cut from a word of at least 4 letters more, so "painted", "painting" and "paints"
# match "paint" (a crude stemmer: +1.8 / +0.7 points on LoCoMo's tuning conversations).
_SUFFIXES = ("ing", "ed", "es", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    """Lower-case words without stop words, stemmed (the lexical ranking's terms)."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def bm25(
    query: Collection[str], docs: Sequence[Sequence[str]], k1: float = _BM25_K1
) -> list[float]:
    """Okapi BM25 of each document (its terms) for the query's terms, with the term
    statistics of `docs` themselves."""
    if not docs:
        return []
    average = sum(len(d) for d in docs) / len(docs) or 1.0
    frequency = {term: sum(1 for d in docs if term in d) for term in query}
    scores = []
    for doc in docs:
        counts = Counter(doc)
        score = 0.0
        for term in query:
            tf = counts.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (len(docs) - frequency[term] + 0.5) / (frequency[term] + 0.5))
            norm = tf + k1 * (1 - _BM25_B + _BM25_B * len(doc) / average)
            score += idf * tf * (k1 + 1) / norm
        scores.append(score)
    return scores


# A turn ranks itself the newest messages saved and not indexed yet (the index takes them in
# batches, ADR 0074): at most TAIL_MESSAGES, from the TAIL_THREADS threads saved last. The
# batch is what a thread's own context shows verbatim, so this many cover another thread's
# unindexed tail at the defaults, and embedding them stays within the turn's budget.
TAIL_MESSAGES = 16
TAIL_THREADS = 4


def tail_span(position: int, upto: int, room: int) -> tuple[int, int]:
    """The positions `[first, end)` of a thread's newest messages not indexed (those from
    `position` below `upto`), `room` at most; empty when there is none or no room."""
    end = max(position, upto)
    return max(position, end - max(0, room)), end


def tail_hits(
    query: Sequence[float], tail: Sequence[tuple[str, int, Sequence[float]]]
) -> list[Hit]:
    """The cosine of each unindexed message's vector (unit length, as the index's are) to
    the query's: hits ranked beside the index's own."""
    return [
        Hit(thread_id, seq, sum(a * b for a, b in zip(query, vector, strict=True)))
        for thread_id, seq, vector in tail
    ]
