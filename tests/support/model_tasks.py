"""Every model task with an input and a fragment its prompt must hold."""

from __future__ import annotations

from typing import Any

from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.proposals import MEMORY_KINDS
from agent_memory.domain.tasks.base import STEP_DEADLINE_S, ModelRequest, ModelTask
from agent_memory.domain.tasks.learning_changes import (
    LEARNING_CHANGES,
    KnownBotEntry,
    LearningInput,
    TurnItem,
)
from agent_memory.domain.tasks.memory_bot_requests import (
    CONFIDE_ANSWER,
    ENRICHMENT,
    ConfideInput,
    EnrichmentInput,
    VisibleEntry,
)
from agent_memory.domain.tasks.memory_changes import MEMORY_CHANGES, LearningRequest
from agent_memory.domain.tasks.observation import (
    OBSERVATION,
    REFLECTION,
    TITLE,
    ObservationInput,
    ReflectionInput,
    TitleInput,
)

CONSOLIDATION = LearningRequest(
    "session",
    (EvidenceItem("i-01", "user", "Remember that my budget is 1500 EUR."),),
    (),
    MEMORY_KINDS,
)


TURN = LearningInput(
    items=(
        TurnItem("i-1", "user", "ana", "I prefer window seats. My budget is 1500 EUR."),
        TurnItem("i-2", "assistant", "bot", "I will remember that you like aisle seats."),
        TurnItem("i-3", "tool", None, "My hotel is the Adlon.", app="hotels"),
    ),
    entries=(KnownBotEntry("mem_1", "fact", "Ana flies from Berlin.", ("travel",)),),
    topic_counts={"travel": 3},
)


OBSERVED = ObservationInput(
    messages=(
        EvidenceItem("m-1", "user", "Plan a trip to Lisbon in May.\nBudget 1500 EUR."),
        EvidenceItem("m-2", "assistant", "Lisbon in May: flights from 120 EUR."),
    ),
    thread_title=True,
)


# (task, input, a fragment the prompt must hold)
CASES: list[tuple[ModelTask[Any, Any], Any, str]] = [
    (MEMORY_CHANGES, CONSOLIDATION, "must name its sources"),
    (CONFIDE_ANSWER, ConfideInput("I made a mistake: I deleted the wrong file."), "priest"),
    (LEARNING_CHANGES, TURN, "never support a fact alone"),
    (
        ENRICHMENT,
        EnrichmentInput(
            "Book a flight for me.", (VisibleEntry("mem_1", "Ana flies from Berlin."),)
        ),
        "Keep everything the person says and asks",
    ),
    (TITLE, TitleInput("what's the weather in Lisbon in May? and hotels"), "first message"),
    (OBSERVATION, OBSERVED, "dense observations"),
    (REFLECTION, ReflectionInput("- a\n- a\n\n- b"), "Condense"),
]


IDS = [task.name for task, _input, _fragment in CASES]


# A learning request of one person's item, and the answer every provider's tests send back.
BUDGET_ANSWER: dict[str, Any] = {
    "changes": [
        {
            "op": "remember",
            "key": "budget",
            "content": "The trip budget is 1500 EUR.",
            "kind": "fact",
            "sources": ["i-02"],
        }
    ]
}


def budget_request() -> ModelRequest:
    return ModelRequest(
        MEMORY_CHANGES,
        LearningRequest(
            pool_kind="session",
            items=(EvidenceItem("i-02", "user", "Remember that my budget is 1500 EUR"),),
            memory=(),
            allowed_kinds=MEMORY_KINDS,
        ),
        STEP_DEADLINE_S,
    )
