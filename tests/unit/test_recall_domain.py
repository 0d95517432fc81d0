"""Semantic recall's pure rules (domain/recall.py): keys, the last N left out, windows and
their merging, the hybrid re-ranking, and the local model's meaning."""

from __future__ import annotations

import math

import pytest

from agent_memory.domain import recall as rules
from agent_memory.domain import recall_ranking as ranking
from agent_memory.domain.memory_options import effective_options
from agent_memory.domain.recall import Hit


def test_settings_follow_the_effective_option() -> None:
    assert rules.settings_of(effective_options({})) is None
    on = rules.settings_of(effective_options({"semanticRecall": True}))
    assert on == rules.RecallSettings(top_k=5, before=2, after=2, scope="resource")
    window = {"topK": 3, "messageRange": {"before": 0, "after": 4}, "scope": "thread"}
    assert rules.settings_of(effective_options({"semanticRecall": window})) == (
        rules.RecallSettings(3, 0, 4, "thread")
    )


def test_keys_name_a_thread_and_a_position_only() -> None:
    key = rules.vector_key("th_abc", 42)
    assert key == "th_abc#0000000042"
    assert rules.parse_key(key) == ("th_abc", 42)
    assert rules.parse_key("mem_123") is None


def test_only_conversation_text_is_embedded() -> None:
    assert rules.embedded("user", "hello")
    assert rules.embedded("assistant", "hi")
    assert not rules.embedded("tool", '{"result": 1}')
    assert not rules.embedded("user", "   ")
    assert rules.embedding_input("What city?", "Lisbon.") == "What city?\nLisbon."
    assert rules.embedding_input(None, "Lisbon.") == "Lisbon."


def test_the_last_n_are_left_out_and_duplicates_once() -> None:
    hits = [Hit("th_1", 9, 0.9), Hit("th_1", 3, 0.8), Hit("th_2", 9, 0.7), Hit("th_1", 3, 0.6)]
    kept = rules.kept_hits(hits, current_thread="th_1", recent_from=8)
    assert kept == [Hit("th_1", 3, 0.8), Hit("th_2", 9, 0.7)]
    assert rules.kept_hits(hits, "th_1", None) == [
        Hit("th_1", 9, 0.9),
        Hit("th_1", 3, 0.8),
        Hit("th_2", 9, 0.7),
    ]


def test_windows_merge_when_they_touch_and_stop_before_the_last_n() -> None:
    hits = [Hit("th_1", 5, 0.9), Hit("th_1", 8, 0.5), Hit("th_2", 1, 0.7), Hit("th_1", 20, 0.6)]
    windows = rules.windows(hits, before=1, after=1, current_thread="th_1", recent_from=21)
    assert [(w.thread_id, w.first, w.last, w.score) for w in windows] == [
        ("th_1", 4, 9, 0.9),
        ("th_2", 0, 2, 0.7),
        ("th_1", 19, 20, 0.6),
    ]
    assert windows[0].hits == (5, 8)


def test_a_hit_inside_a_better_hits_window_does_not_count_toward_top_k() -> None:
    ranked = [
        Hit("th_1", 10, 0.9),
        Hit("th_1", 11, 0.8),  # inside 8..12: skipped
        Hit("th_2", 11, 0.7),  # another thread: its own window
        Hit("th_1", 13, 0.6),  # past 12: a window of its own (touching, merged when shown)
        Hit("th_1", 30, 0.5),
    ]
    kept = rules.distinct_hits(ranked, 3, 2, 2, current_thread="th_9", recent_from=None)
    assert kept == [Hit("th_1", 10, 0.9), Hit("th_2", 11, 0.7), Hit("th_1", 13, 0.6)]
    # With no range every distinct message is a window of its own.
    assert len(rules.distinct_hits(ranked, 5, 0, 0, "th_9", None)) == 5


def test_a_window_whose_hit_was_deleted_shows_nothing() -> None:
    window = rules.Window("th_1", 3, 5, 0.9, (4,))
    assert rules.shown(window, [(3, "m3"), (5, "m5")], set()) is None


def test_lexical_scores_favour_the_rare_shared_words() -> None:
    texts = ["I adopted a cat named Miso", "The weather is nice", "My cat sleeps a lot"]
    scores = ranking.lexical_scores("What is my cat Miso like?", texts)
    assert scores[0] > scores[2] > scores[1] == 0


def test_the_lexical_ranking_reads_each_candidate_with_the_message_before_it() -> None:
    hits = [Hit("t", 5, 0.9), Hit("t", 4, 0.8), Hit("u", 0, 0.7)]
    # Each position once; the first message of a thread has none before it.
    assert ranking.text_positions(hits) == [("t", 4), ("t", 5), ("t", 3), ("u", 0)]
    contents = {
        ("t", 3): "Did you like the pottery class?",
        ("t", 4): "Where did you go in May?",
        ("t", 5): "Lisbon!",
        ("u", 0): "Lisbon is lovely in May",
    }
    present, texts = ranking.lexical_inputs([*hits, Hit("t", 9, 0.1)], contents)
    # A candidate whose message is gone (t/9) is dropped; the others read as they embed.
    assert present == hits
    assert texts == [
        "Where did you go in May?\nLisbon!",
        "Did you like the pottery class?\nWhere did you go in May?",
        "Lisbon is lovely in May",
    ]
    # The short answer now shares the question's words ("May"), its own text alone does not.
    scores = ranking.lexical_scores("Where did I go in May?", texts)
    assert scores[0] > 0
    assert ranking.lexical_scores("Where did I go in May?", ["Lisbon!"]) == [0.0]


def test_hybrid_adds_the_normalised_lexical_score() -> None:
    hits = [Hit("t", 1, 0.50), Hit("t", 5, 0.45)]
    fused = ranking.hybrid(hits, [0.0, 2.0], weight=0.3)
    assert [h.seq for h in fused] == [5, 1]
    assert fused[0].score == pytest.approx(0.75)
    assert ranking.hybrid(hits, [0.0, 0.0]) == hits


def test_hybrid_lifts_a_hit_whose_neighbour_is_a_hit_too() -> None:
    # Seq 7 alone scores higher, but 3 answers what 2 asked: both are candidates.
    hits = [Hit("t", 7, 0.52), Hit("t", 3, 0.50), Hit("t", 2, 0.30), Hit("u", 4, 0.49)]
    fused = ranking.hybrid(hits, [0.0, 0.0, 0.0, 0.0], neighbour=0.2)
    assert [h.seq for h in fused] == [3, 7, 4, 2]
    assert fused[0].score == pytest.approx(0.50 + 0.2 * 0.30)
    # A neighbour in another thread is no neighbour.
    assert fused[2].score == pytest.approx(0.49)


def test_a_message_said_by_the_person_the_question_names_is_lifted() -> None:
    hits = [Hit("t", 1, 0.50), Hit("t", 2, 0.48), Hit("t", 3, 0.47)]
    contents = {
        ("t", 1): "Melanie: Caroline went to a support group.",
        ("t", 2): "Caroline: I went to a support group yesterday.",
        ("t", 3): "A support group meets on Fridays.",
    }
    question = "When did Caroline go to the support group?"
    lifted = ranking.speaker_lifted(question, hits, contents, (2, 2))
    # What Caroline said now ranks first; a message only mentioning her gains nothing.
    assert max(lifted, key=lambda h: h.score).seq == 2
    assert lifted[1].score == pytest.approx(0.48 + ranking.SPEAKER_WEIGHT)
    assert [h.score for h in lifted[::2]] == [0.50, 0.47]
    assert ranking.speaker_lifted(question, hits, contents, (0, 0)) == lifted
    # A window of one message either side shows more of her words around a reply to her.
    assert ranking.speaker_lifted(question, hits, contents, (1, 1)) == hits
    assert ranking.speaker_lifted(question, hits, contents, (2, 1)) == hits
    # A question naming nobody, or someone else, leaves the ranking as it was.
    assert ranking.speaker_lifted("when did she go?", hits, contents, (2, 2)) == hits
    assert ranking.speaker_lifted("When did Jon go?", hits, contents, (2, 2)) == hits


def test_lexical_words_are_stemmed() -> None:
    assert rules.words("She painted sunsets while painting") == [
        "paint",
        "sunset",
        "while",
        "paint",
    ]
    assert ranking.lexical_scores("Who is painting?", ["I paint", "I swim"])[0] > 0


def test_the_local_model_embeds_meaning() -> None:
    from agent_memory.adapters.local_embedder import shared_minilm

    model = shared_minilm()
    food, bread, violin = model.embed(
        ["A man is eating food.", "A man is eating a piece of bread.", "A woman plays violin."]
    )

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    # sentence-transformers' published similarity for this pair with all-MiniLM-L6-v2.
    assert cosine(food, bread) == pytest.approx(0.7553, abs=2e-3)
    assert cosine(food, violin) < 0.1
    assert math.isclose(cosine(food, food), 1.0, abs_tol=1e-5)


def test_a_tail_is_its_newest_unindexed_messages_within_the_room() -> None:
    assert rules.tail_span(10, 14, 16) == (10, 14)
    assert rules.tail_span(0, 40, 16) == (24, 40)
    assert rules.tail_span(14, 14, 16) == (14, 14)
    assert rules.tail_span(3, 9, 0) == (9, 9)


def test_tail_hits_score_by_cosine_beside_the_indexes_hits() -> None:
    hits = rules.tail_hits([1.0, 0.0], [("t", 4, [0.6, 0.8]), ("u", 2, [1.0, 0.0])])
    assert [(h.thread_id, h.seq) for h in hits] == [("t", 4), ("u", 2)]
    assert [h.score for h in hits] == pytest.approx([0.6, 1.0])
