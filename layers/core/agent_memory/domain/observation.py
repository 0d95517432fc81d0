"""The observer's rules (seed 003, "The observer"), pure: how tokens are counted, when the
observer runs in the background, when buffered observations replace raw history, when it
runs synchronously (`blockAfter`), and when the reflector condenses the log.

Token counting (`count_tokens`) estimates a BPE tokenizer's pieces: an ASCII word is one
token plus one per further ten characters, a non-ASCII letter run one per two characters,
a digit group of up to three one, a punctuation run one per three characters, a line break
one; a message adds `MESSAGE_OVERHEAD`. Measured against o200k_base in
tests/unit/test_observation.py: within 6 % on chat, 2 % on code, 5 % on Markdown.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from agent_memory.domain import bounds
from agent_memory.domain.recall import bm25
from agent_memory.domain.threads import MEMORY_HEADER, Found

# A chat message's role framing (OpenAI's chat format spends about four tokens on it).
MESSAGE_OVERHEAD = 4
# "auto" idle activation: the model providers' prompt-cache lifetime (Anthropic, Bedrock's
# prompt caching and OpenAI all keep a cached prefix about five minutes after its last use).
PROMPT_CACHE_MS = 300_000
# The synchronous observation inside a context request (API.md: under API Gateway's 30 s).
BLOCK_DEADLINE_S = 20.0
# A reflection condenses at least this many log chunks (one chunk is already dense).
MIN_REFLECTED_CHUNKS = 2

# Word runs (letters and `_`, a contraction kept on its word), digit groups, punctuation
# runs, whitespace runs.
_PIECES = re.compile(r"[^\W\d]+(?:'[^\W\d]+)?|\d{1,3}|[^\w\s]+|\s+")

Status = Literal["buffered", "active"]
Kind = Literal["observation", "reflection"]


def count_tokens(text: str) -> int:
    """The estimated token count of `text` (the module's stated method)."""
    total = 0
    for match in _PIECES.finditer(text):
        piece = match.group()
        first = piece[0]
        if first.isspace():
            # A line break is a token; runs of spaces cost about one per four.
            total += 1 if "\n" in piece else len(piece) // 4
        elif first.isdigit():
            total += 1
        elif first.isalpha() or (first == "_" and len(piece) > 1):
            if piece.isascii():
                total += 1 + len(piece) // 10 + ("'" in piece)
            else:
                total += max(1, math.ceil(len(piece) / 2))
        else:
            total += math.ceil(len(piece) / 3)
    return total


def message_tokens(content: str) -> int:
    """The tokens one message costs in a context: its content and its role framing."""
    return count_tokens(content) + MESSAGE_OVERHEAD


def total_message_tokens(contents: Sequence[str]) -> int:
    return sum(message_tokens(c) for c in contents)


def observing(options: Mapping[str, Any]) -> bool:
    """The observer is on and may write: the context shows every message it has not made
    active."""
    return bool(options["observationalMemory"]["enabled"]) and not options["readOnly"]


# --- thresholds ---------------------------------------------------------------------------


def idle_ms(value: int | str | bool | None) -> int | None:
    """An effective `activateAfterIdle` as milliseconds, or None when it is off."""
    if value is None or value is False or value is True:
        return None
    if value == "auto":
        return PROMPT_CACHE_MS
    return int(value)


@dataclass(frozen=True)
class Thresholds:
    """An effective `observationalMemory` option as the numbers the rules compare."""

    message_tokens: int
    buffer_every: int
    activation: float
    block_after: int
    buffer_on_idle: bool
    idle_ms: int | None
    log_tokens: int
    reflect_from: int
    reflect_block: int
    reflect_idle_ms: int | None


def thresholds(observer: Mapping[str, Any]) -> Thresholds:
    """The thresholds of an effective `observationalMemory` block (memory_options.effective)."""
    obs, ref = observer["observation"], observer["reflection"]
    limit = int(obs["messageTokens"])
    log_limit = int(ref["observationTokens"])
    # `bufferTokens` below one is a share of `messageTokens`, else a count.
    buffer = obs["bufferTokens"]
    return Thresholds(
        message_tokens=limit,
        buffer_every=max(1, math.ceil(limit * buffer)) if buffer < 1 else int(buffer),
        activation=float(obs["bufferActivation"]),
        block_after=math.ceil(limit * float(obs["blockAfter"])),
        buffer_on_idle=bool(obs["bufferOnIdle"]),
        idle_ms=idle_ms(obs["activateAfterIdle"]),
        log_tokens=log_limit,
        reflect_from=math.ceil(log_limit * float(ref["bufferActivation"])),
        reflect_block=math.ceil(log_limit * float(ref["blockAfter"])),
        reflect_idle_ms=idle_ms(ref["activateAfterIdle"]),
    )


def wants_observation(pending: int, t: Thresholds, *, turn_ended: bool) -> bool:
    """Whether a save starts a background observation: the messages not yet observed
    reached `bufferTokens`, or (`bufferOnIdle`) a turn ended with anything unobserved."""
    if pending <= 0:
        return False
    return pending >= t.buffer_every or (t.buffer_on_idle and turn_ended)


def must_block(unobserved: int, t: Thresholds) -> bool:
    """`blockAfter`: unobserved message tokens outran the background observer."""
    return unobserved > t.block_after


def kept_raw(contents: Sequence[str], t: Thresholds) -> int:
    """How many of the newest messages a synchronous observation leaves raw: those
    within the share `bufferActivation` leaves of `messageTokens`."""
    room = t.message_tokens - math.floor(t.activation * t.message_tokens)
    kept = used = 0
    for content in reversed(contents):
        used += message_tokens(content)
        if used > room:
            break
        kept += 1
    return kept


def idle(last_message_at: int | None, now_ms: int, after_ms: int | None) -> bool:
    """The conversation has been quiet for `after_ms` (None: idle activation is off)."""
    if after_ms is None or last_message_at is None:
        return False
    return now_ms - last_message_at >= after_ms


# --- the log ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """One part of the observation log. An observation covers the messages numbered
    `first <= seq < upto` (`upto_tokens`: the thread's message tokens through them); a
    reflection condenses the log's chunks numbered `first <= n < upto`."""

    n: int
    kind: Kind
    status: Status
    first: int
    upto: int
    tokens: int
    upto_tokens: int = 0
    at: int = 0


def activate_count(
    buffered: Sequence[Chunk], raw_tokens: int, active_tokens: int, t: Thresholds, *, quiet: bool
) -> int:
    """How many of the oldest buffered observations replace raw history now.

    `raw_tokens`: the thread's message tokens after the active observations (the history
    the context would carry); `active_tokens`: the thread's message tokens at that
    boundary. Idle (`quiet`): every buffered observation. Past `messageTokens`: the oldest
    ones whose messages stay within `bufferActivation` of the raw history (at least one),
    so the newest messages the share leaves stay raw and the rest stay in reserve."""
    if not buffered:
        return 0
    if quiet:
        return len(buffered)
    if raw_tokens <= t.message_tokens:
        return 0
    budget = t.activation * raw_tokens
    count = 0
    for chunk in buffered:
        if count and chunk.upto_tokens - active_tokens > budget:
            break
        count += 1
    return count


def log_tokens(chunks: Sequence[Chunk]) -> int:
    """Tokens of the active log (what the context's `observations` carries)."""
    return sum(c.tokens for c in chunks if c.status == "active")


def wants_reflection(active: Sequence[Chunk], buffered_reflection: bool, t: Thresholds) -> bool:
    """Background reflection starts once the active log reaches `bufferActivation` of
    `observationTokens`, when none waits in reserve and there is something to condense."""
    return (
        not buffered_reflection
        and len(active) >= MIN_REFLECTED_CHUNKS
        and log_tokens(active) >= t.reflect_from
    )


def passes_reflection_share(
    before: Sequence[Chunk],
    reserved_before: bool,
    after: Sequence[Chunk],
    reserved_after: bool,
    t: Thresholds,
) -> bool:
    """Whether a change of the active log (`before` -> `after`, with a reflection in
    reserve or not) is the one that makes it want a background reflection: that change
    starts the reflection at once, so it never waits for the next save, and a log that
    already wanted one (its reflection under way) starts no second."""
    return wants_reflection(after, reserved_after, t) and not wants_reflection(
        before, reserved_before, t
    )


def activates_reflection(active_log: int, t: Thresholds, *, quiet: bool) -> bool:
    """A reflection in reserve replaces what it condensed once the log passes
    `observationTokens`, or after `reflection.activateAfterIdle`."""
    return quiet or active_log > t.log_tokens


def must_reflect(active_log: int, t: Thresholds) -> bool:
    """`reflection.blockAfter`: the log outgrew the background reflector."""
    return active_log > t.reflect_block


@dataclass(frozen=True)
class ShownLog:
    """The log as a person reads it: its text, its tokens, the reflections that condensed it."""

    text: str
    tokens: int
    reflections: int


def render(chunks: Sequence[Chunk], texts: Mapping[int, str]) -> str:
    """The log as text, oldest first (a reflection stands where what it condensed was)."""
    return "\n".join(texts[c.n].strip() for c in sorted(chunks, key=place) if c.n in texts)


def place(chunk: Chunk) -> tuple[int, int]:
    """Where a chunk reads in the log: a reflection where the first chunk it condensed was
    (chunks made while it was in reserve come after it)."""
    return (chunk.first, 0) if chunk.kind == "reflection" else (chunk.n, 1)


# --- what the agent's model gets --------------------------------------------------------

RECALL_TOOL = "recall"
OBSERVATIONS_NOTE = (
    "These are your observations of this conversation so far, oldest first: they replace "
    "its older messages. The messages after them are newer than every observation."
)


def with_observations(base: str, observations: str | None, recall: bool) -> str:
    """The memory's system text with the observations after the working memory, always
    in this order (header, working memory, observations, how to recall), so a provider's
    prompt cache keeps hitting while the newest part changes."""
    if not observations and not recall:
        return base
    parts = [base] if base else [MEMORY_HEADER]
    if observations:
        parts += ["", "<observations>", observations, "</observations>", OBSERVATIONS_NOTE]
    if recall:
        parts += [
            "",
            f"Call {RECALL_TOOL} with a few words to read the original messages behind "
            "an observation when you need their exact wording.",
        ]
    return "\n".join(parts)


def recall_tool(instructions: str | None) -> dict[str, Any]:
    """The `recall` tool of `observationalMemory.retrieval` (`POST .../recall`)."""
    description = "Search the raw messages of your conversations with this user by words."
    if instructions:
        description += f" {instructions}"
    return {
        "name": RECALL_TOOL,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "words to look for"},
                "limit": {"type": "integer", "minimum": 1, "maximum": bounds.RECALL_MAX},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    }


_TERMS = re.compile(r"[^\W_]+")
# Okapi BM25's usual constant.
_K1 = 1.2


def terms(text: str) -> list[str]:
    """Lowercase word terms (letters and digits) of a text."""
    return [t.lower() for t in _TERMS.findall(text)]


def lexical_rank(query: str, documents: Sequence[str]) -> list[tuple[int, float]]:
    """Okapi BM25 of `query` over `documents`: (index, score) of the documents sharing a
    term with it, best first, ties oldest first."""
    wanted = set(terms(query))
    if not wanted:
        return []
    scores = bm25(wanted, [terms(d) for d in documents], k1=_K1)
    scored = [(index, score) for index, score in enumerate(scores) if score > 0]
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


# Reciprocal rank fusion's usual constant (Cormack et al., 2009).
_RRF_K = 60


def fuse(rankings: Sequence[Sequence[Found]]) -> list[Found]:
    """Reciprocal rank fusion of ranked found messages (by message id): each list adds
    1 / (60 + rank) to a message's score; best first, ties by first appearance. The
    fused score replaces each list's own."""
    scores: dict[str, float] = {}
    first: dict[str, Found] = {}
    for ranking in rankings:
        for rank, found in enumerate(ranking, start=1):
            key = found.message.id
            scores[key] = scores.get(key, 0.0) + 1.0 / (_RRF_K + rank)
            first.setdefault(key, found)
    order = sorted(scores, key=lambda k: -scores[k])
    return [replace(first[k], score=round(scores[k], 6)) for k in order]


Notes = str | Mapping[str, Any]


def rebased_notes(shown: Notes | None, answered: Notes, now: Notes | None) -> Notes:
    """The observer's notes decided again on the notes as they are `now`: what its answer
    changed from the notes it was `shown` (lines added and removed, or keys set and
    removed), applied to `now`, so a concurrent writer's changes stay. As answered when the
    notes did not move."""
    if now == shown or now is None:
        return answered
    if isinstance(answered, str) and isinstance(now, str):
        before = set(shown.splitlines()) if isinstance(shown, str) else set()
        lines = answered.splitlines()
        removed = before - set(lines)
        kept = [line for line in now.splitlines() if line not in removed]
        present = set(kept)
        added = [line for line in lines if line not in before and line not in present]
        return "\n".join([*kept, *added])
    if isinstance(answered, Mapping) and isinstance(now, Mapping):
        base = shown if isinstance(shown, Mapping) else {}
        merged = {k: v for k, v in now.items() if k not in base or k in answered}
        merged.update({k: v for k, v in answered.items() if base.get(k) != v})
        return merged
    return answered
