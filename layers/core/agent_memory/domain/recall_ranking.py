"""How semantic recall ranks its candidates (the index's nearest messages and the unindexed
tail): each candidate's cosine, plus its lexical score over the text its vector embeds, plus
a share of its neighbours' scores, plus a lift when the question names who said it.

Every weight is chosen on LoCoMo's conversations 0-4 and scored on 5-9 after (ADR 0084).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from agent_memory.domain.recall import Hit, bm25, embedding_input, words

# The lexical score's weight, normalised to [0, 1] over the candidates, added to the cosine
# (LoCoMo: 0.3..0.5 within 0.3 points of each other in every row; docs/performance.md).
LEXICAL_WEIGHT = 0.4
# A candidate next to another candidate of its thread gains this share of the better
# neighbour's fused score: evidence in a dialogue spans adjacent turns. Chosen on LoCoMo's
# conversations 0-4 (0.1..0.3; ADR 0084), the held-out ones scored after.
NEIGHBOUR_WEIGHT = 0.2
# A candidate said by a person the question names gains this much cosine: a question about
# someone is answered by what they said. "Said by" is a transcript's speaker label, the
# message opening with the name and a colon ("Caroline: I went to a support group."). Chosen
# on LoCoMo's conversations 0-4 (0.03..0.3; ADR 0084).
SPEAKER_WEIGHT = 0.1
_NAME = re.compile(r"\b[A-Z][a-z]+\b")
_SPEAKER = re.compile(r"([A-Z][a-z]+):")


def speaker_lifted(
    query: str,
    hits: Sequence[Hit],
    contents: Mapping[tuple[str, int], str],
    window: tuple[int, int],
    weight: float = SPEAKER_WEIGHT,
) -> list[Hit]:
    """The hits, each lifted by `weight` when its own message opens with the speaker label
    of a name the query holds (capitalised, as names are written); the others unchanged.
    A dialogue alternates speakers, so a window (`before`, `after`) of even sides around a
    speaker's message shows more of what they said than one around a reply to them, and one
    of an odd side fewer: only windows of even sides are lifted."""
    names = set(_NAME.findall(query))
    if not names or any(side % 2 for side in window):
        return list(hits)
    lifted = []
    for hit in hits:
        said = _SPEAKER.match(contents.get((hit.thread_id, hit.seq), ""))
        named = said is not None and said.group(1) in names
        lifted.append(Hit(hit.thread_id, hit.seq, hit.score + weight) if named else hit)
    return lifted


def text_positions(hits: Sequence[Hit]) -> list[tuple[str, int]]:
    """The messages the lexical re-ranking reads, each once: every candidate and the message
    before it (the text its vector embeds)."""
    wanted: dict[tuple[str, int], None] = {}
    for hit in hits:
        if hit.seq > 0:
            wanted[(hit.thread_id, hit.seq - 1)] = None
        wanted[(hit.thread_id, hit.seq)] = None
    return list(wanted)


def lexical_inputs(
    hits: Sequence[Hit], contents: Mapping[tuple[str, int], str]
) -> tuple[list[Hit], list[str]]:
    """The candidates whose message is still stored, each with the text the lexical score
    reads: the message with the one before it, as its vector embeds it (`embedding_input`),
    so a short answer matches the words of the question it answers."""
    present: list[Hit] = []
    texts: list[str] = []
    for hit in hits:
        content = contents.get((hit.thread_id, hit.seq))
        if content is None:
            continue
        present.append(hit)
        texts.append(embedding_input(contents.get((hit.thread_id, hit.seq - 1)), content))
    return present, texts


def lexical_scores(query: str, texts: Sequence[str]) -> list[float]:
    """Okapi BM25 of each text for `query`, with the term statistics of `texts` themselves
    (the candidates: the index holds no text to count over)."""
    return bm25(set(words(query)), [words(t) for t in texts])


def hybrid(
    hits: Sequence[Hit],
    lexical: Sequence[float],
    weight: float = LEXICAL_WEIGHT,
    neighbour: float = NEIGHBOUR_WEIGHT,
) -> list[Hit]:
    """Each hit's cosine plus `weight` x its lexical score normalised by the best one, plus
    `neighbour` x the better fused score of the messages just before and after it among the
    hits; best first (ties keep the dense order)."""
    best = max(lexical, default=0.0)
    fused = {
        (h.thread_id, h.seq): h.score + (weight * s / best if best > 0 else 0.0)
        for h, s in zip(hits, lexical, strict=True)
    }
    scored = [
        Hit(
            thread_id,
            seq,
            score
            + neighbour
            * max(fused.get((thread_id, seq - 1), 0.0), fused.get((thread_id, seq + 1), 0.0), 0.0),
        )
        for (thread_id, seq), score in fused.items()
    ]
    return sorted(scored, key=lambda h: -h.score)
