"""The observer's pure rules (domain/observation.py): the token estimate against a real
tokenizer (o200k_base through `bpe-openai`, offline), the thresholds, activation, the
reflector's, BM25 recall, and the observation task's local answer."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.domain import observation as rules
from agent_memory.domain import threads
from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.memory_options import effective
from agent_memory.domain.observation import Chunk
from agent_memory.domain.tasks.observation import (
    OBSERVATION,
    ObservationInput,
    WorkingMemory,
)

ROOT = Path(__file__).resolve().parents[2]

# Conversation turns as an agent's users write them (the repo holds no chat corpus; the
# LoCoMo measurement is bench/token_count.py's).
CHAT = [
    "Hey! Can you help me plan a trip to Lisbon in May? We're two adults and a kid.",
    "Sure. What's your budget, and do you prefer the old town or somewhere near a beach?",
    "Around 1,500 EUR for the week. I'd rather be close to the tram lines, my son loves them.",
    "Got it: Alfama or Graça would suit you. Shall I look at flights from Berlin on the 12th?",
    "Yes please, morning flights only - he gets cranky after lunch :)",
    "I found a 07:35 TAP flight (TP 553), 240 EUR each, back on Sunday the 19th at 18:10.",
    "Perfect, book it. Also remind me to renew my passport, it expires in June 2027.",
    "Done! I've noted the passport. Anything else - restaurants, a babysitter, museums?",
    "What's the weather usually like? Should we pack jackets for the evenings?",
    "Evenings are around 15°C in May, so a light jacket is a good idea for everyone.",
]


def _corpus() -> dict[str, list[str]]:
    docs = "".join(p.read_text() for p in sorted((ROOT / "docs" / "adr").glob("*.md")))
    code = (ROOT / "layers/core/agent_memory/domain/memory_options.py").read_text()
    return {
        "chat": CHAT,
        "docs": [docs[i : i + 3000] for i in range(0, min(len(docs), 60_000), 3000)],
        "code": [code[i : i + 3000] for i in range(0, len(code), 3000)],
    }


@pytest.mark.parametrize(("kind", "bound"), [("chat", 0.12), ("docs", 0.10), ("code", 0.10)])
def test_the_estimate_is_close_to_o200k(kind: str, bound: float) -> None:
    import bpe_openai  # type: ignore[import-untyped]

    encoding = bpe_openai.get_encoding("o200k_base")
    texts = _corpus()[kind]
    real = sum(len(encoding.encode(t)) for t in texts)
    estimated = sum(rules.count_tokens(t) for t in texts)
    assert abs(estimated - real) / real < bound, (kind, estimated, real)


def test_counting_examples() -> None:
    assert rules.count_tokens("") == 0
    assert rules.count_tokens("Hello world") == 2
    assert rules.count_tokens("I'm here") == 3
    assert rules.count_tokens("2026") == 2  # digit groups of three
    assert rules.message_tokens("Hello world") == 2 + rules.MESSAGE_OVERHEAD


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200)


@settings(max_examples=150, deadline=None)
@given(_text, _text)
def test_counts_add_across_a_line_break(a: str, b: str) -> None:
    """Text split at a line break costs its parts and the break: a message's count is
    the sum of its lines'."""
    a, b = a.rstrip(), b.lstrip()
    assert rules.count_tokens(f"{a}\n{b}") == rules.count_tokens(a) + 1 + rules.count_tokens(b)


@settings(max_examples=150, deadline=None)
@given(_text)
def test_visible_text_costs_at_least_a_token(text: str) -> None:
    count = rules.count_tokens(text)
    assert count >= 0
    if text.strip():
        assert count >= 1


def _thresholds(**observation: Any) -> rules.Thresholds:
    options = effective({"options": {"observationalMemory": {"observation": observation}}})
    return rules.thresholds(options["options"]["observationalMemory"])


def test_buffer_tokens_is_a_share_or_a_count() -> None:
    assert _thresholds().buffer_every == 4_500  # the seed: 0.15 of 30,000
    assert _thresholds(messageTokens=1000, bufferTokens=0.25).buffer_every == 250
    assert _thresholds(bufferTokens=700).buffer_every == 700
    assert _thresholds(messageTokens=1000, blockAfter=1.5).block_after == 1500


def test_auto_idle_is_the_providers_prompt_cache_lifetime() -> None:
    assert rules.idle_ms("auto") == 300_000
    assert rules.idle_ms(False) is None
    assert rules.idle_ms(60_000) == 60_000


def test_a_save_observes_at_the_interval_or_at_a_turns_end_with_buffer_on_idle() -> None:
    t = _thresholds(messageTokens=1000, bufferTokens=300)
    assert not rules.wants_observation(299, t, turn_ended=True)
    assert rules.wants_observation(300, t, turn_ended=False)
    idle = _thresholds(messageTokens=1000, bufferTokens=300, bufferOnIdle=True)
    assert rules.wants_observation(1, idle, turn_ended=True)
    assert not rules.wants_observation(1, idle, turn_ended=False)
    assert not rules.wants_observation(0, idle, turn_ended=True)


def _chunks(ends: list[int]) -> list[Chunk]:
    ends = sorted(set(ends))
    return [
        Chunk(
            n=i + 1,
            kind="observation",
            status="buffered",
            first=i,
            upto=i + 1,
            tokens=10,
            upto_tokens=end,
        )
        for i, end in enumerate(ends)
    ]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 5000), min_size=0, max_size=12),
    st.integers(0, 6000),
    st.floats(0.05, 1.0),
    st.booleans(),
)
def test_activation_keeps_the_newest_messages_the_share_leaves(
    ends: list[int], raw: int, share: float, quiet: bool
) -> None:
    t = _thresholds(messageTokens=1000, bufferActivation=share)
    buffered = _chunks(ends)
    count = rules.activate_count(buffered, raw, 0, t, quiet=quiet)
    assert 0 <= count <= len(buffered)
    if quiet:
        assert count == len(buffered)
    elif raw <= 1000 or not buffered:
        assert count == 0
    else:
        assert count >= 1  # past the threshold something always replaces history
        # Every activated chunk but the first stays within the share of raw history.
        assert all(c.upto_tokens <= share * raw for c in buffered[1:count])
        if count < len(buffered):
            assert buffered[count].upto_tokens > share * raw


def test_a_synchronous_observation_leaves_the_newest_share_raw() -> None:
    t = _thresholds(messageTokens=1000, bufferActivation=0.8)
    hundred = " ".join(["alpha"] * 96)
    assert rules.kept_raw([hundred] * 10, t) == 2  # 20 % of 1,000 tokens


def test_the_reflectors_thresholds() -> None:
    options = effective(
        {"options": {"observationalMemory": {"reflection": {"observationTokens": 1000}}}}
    )["options"]["observationalMemory"]
    t = rules.thresholds(options)
    active = [
        Chunk(n=n, kind="observation", status="active", first=n, upto=n + 1, tokens=300)
        for n in range(1, 3)
    ]
    assert rules.wants_reflection(active, False, t)  # 600 >= 0.5 x 1,000
    assert not rules.wants_reflection(active, True, t)  # one already waits in reserve
    assert not rules.wants_reflection(active[:1], False, t)  # nothing to merge
    assert not rules.activates_reflection(1000, t, quiet=False)
    assert rules.activates_reflection(1001, t, quiet=False)
    assert rules.activates_reflection(10, t, quiet=True)
    assert rules.must_reflect(1901, t)
    assert not rules.must_reflect(1900, t)


def test_a_reflection_reads_where_what_it_condensed_was() -> None:
    chunks = [
        Chunk(n=6, kind="observation", status="buffered", first=10, upto=12, tokens=1),
        Chunk(n=8, kind="reflection", status="active", first=1, upto=6, tokens=1),
        Chunk(n=7, kind="observation", status="buffered", first=12, upto=14, tokens=1),
    ]
    texts = {6: "six", 7: "seven", 8: "reflected"}
    assert rules.render(chunks, texts) == "reflected\nsix\nseven"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=20), st.text(max_size=30))
def test_bm25_ranks_only_documents_sharing_a_term(documents: list[str], query: str) -> None:
    ranked = rules.lexical_rank(query, documents)
    wanted = set(rules.terms(query))
    assert all(wanted & set(rules.terms(documents[i])) for i, _score in ranked)
    scores = [score for _i, score in ranked]
    assert scores == sorted(scores, reverse=True)
    assert all(score > 0 and math.isfinite(score) for score in scores)


def test_bm25_prefers_the_rarer_term() -> None:
    documents = ["the order shipped", "the order 4471 shipped", "the weather"]
    assert rules.lexical_rank("order 4471", documents)[0][0] == 1


def test_the_local_observer_summarizes_titles_and_keeps_notes() -> None:
    asked = ObservationInput(
        messages=(
            EvidenceItem("m1", "user", "Hi there. My name is Ana and I live in Porto. Thanks."),
            EvidenceItem("m2", "assistant", "Welcome! Flights leave at 07:35. Enjoy your day."),
        ),
        thread_title=True,
        working_memory=WorkingMemory("markdown", None, "# User\n- Name:"),
    )
    answer = OBSERVATION.local_answer(asked)
    assert answer.observations.splitlines() == [
        "- user: Hi there. My name is Ana and I live in Porto.",
        "- assistant: Welcome! Flights leave at 07:35.",
    ]
    assert answer.title == "Hi there"
    assert answer.workingMemory == "# User\n- Name:\n- My name is Ana and I live in Porto."
    # Shown its own title, the local observer leaves it; notes it already holds stay.
    again = ObservationInput(
        messages=asked.messages,
        title="Porto",
        thread_title=True,
        working_memory=WorkingMemory("markdown", answer.workingMemory),
    )
    repeated = OBSERVATION.local_answer(again)
    assert repeated.title is None
    assert repeated.workingMemory is None


def test_the_observer_model_is_the_options_then_observer_model_then_local_rules() -> None:
    from agent_memory.service.observer import observer_model

    def om(block: Any) -> Any:
        return effective({"options": {"observationalMemory": block}})["options"][
            "observationalMemory"
        ]

    assert observer_model(om(True), None) == "local/rules"
    assert observer_model(om(True), "openai/small") == "openai/small"
    assert observer_model(om({"model": "openai/top"}), "openai/small") == "openai/top"
    own = om({"observation": {"model": "openai/own"}, "reflection": {"model": "openai/r"}})
    assert observer_model(own, "openai/small") == "openai/own"
    assert observer_model(own, "openai/small", "reflection") == "openai/r"
    # Unset, the reflector follows the observer's own model.
    follows = om({"observation": {"model": "openai/own"}})
    assert observer_model(follows, None, "reflection") == "openai/own"


def test_rank_fusion_prefers_what_both_rankings_found() -> None:
    a, b, c = (threads.Found("th_1", threads.Message(k, "user", k, 0), 1.0) for k in "abc")
    fused = rules.fuse([[a, b], [c, b]])
    assert [f.message.id for f in fused] == ["b", "a", "c"]
    assert fused[0].score == round(1 / 62 + 1 / 62, 6)
    assert rules.fuse([]) == []
