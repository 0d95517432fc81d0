"""Every model task: its name, its generated strict schema, its prompt, its parser and the
deterministic answer `local/rules` gives for it (through the real provider, unchanged)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory.adapters.rules_model import RulesModel
from agent_memory.domain.proposals import ProposedRemember
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.domain.tasks.base import ModelRequest, ModelTask
from agent_memory.domain.tasks.learning_changes import (
    LEARNING_CHANGES,
)
from agent_memory.domain.tasks.memory_bot_requests import (
    CALM_ANSWER,
    CONFIDE_ANSWER,
    ENRICHMENT,
    ConfideInput,
    EnrichmentInput,
    VisibleEntry,
)
from agent_memory.domain.tasks.memory_changes import (
    MEMORY_CHANGES,
)
from agent_memory.domain.tasks.observation import (
    OBSERVATION,
    REFLECTION,
    TITLE,
    UNTITLED,
    ObservationInput,
    ReflectionInput,
    TitleInput,
    WorkingMemory,
    title_from,
)
from tests.support.model_tasks import CASES, CONSOLIDATION, IDS, OBSERVED, TURN

WM_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "seat": {"type": ["string", "null"]}},
}


def _objects(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            found.append(node)
        for value in node.values():
            found += _objects(value)
    elif isinstance(node, list):
        for value in node:
            found += _objects(value)
    return found


def test_the_tasks_are_named_as_api_md_says() -> None:
    assert IDS == [
        "memory_changes",
        "confide_answer",
        "learning_changes",
        "enrichment",
        "title",
        "observation",
        "reflection",
    ]


@pytest.mark.parametrize(("task", "task_input", "fragment"), CASES, ids=IDS)
def test_every_schema_is_strict(task: ModelTask[Any, Any], task_input: Any, fragment: str) -> None:
    schema = task.schema(task_input)
    text = json.dumps(schema)
    assert schema["type"] == "object"
    assert "$ref" not in text
    assert "oneOf" not in text
    assert not {"const", "title", "default", "discriminator"} & _keywords(schema)
    for shape in _objects(schema):
        assert shape["additionalProperties"] is False
        assert shape["required"] == list(shape["properties"])


def _keywords(node: Any) -> set[str]:
    """Every keyword used in a schema (property names are not keywords)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            subs = value.values() if key == "properties" else [value]
            for sub in subs:
                found |= _keywords(sub)
    elif isinstance(node, list):
        for value in node:
            found |= _keywords(value)
    return found


@pytest.mark.parametrize(("task", "task_input", "fragment"), CASES, ids=IDS)
def test_local_rules_answers_every_task_in_its_own_protocol(
    task: ModelTask[Any, Any], task_input: Any, fragment: str
) -> None:
    request = task.request(task_input, deadline_s=5)
    assert request.task == task.name
    assert fragment in request.system
    first = RulesModel().propose(request)
    again = RulesModel().propose(task.request(task_input))
    assert first.text == again.text  # deterministic
    task.parse(first.text, task_input)  # the task's own parser accepts it


@pytest.mark.parametrize(("task", "task_input", "fragment"), CASES, ids=IDS)
def test_an_answer_that_is_not_the_protocol_is_invalid_output(
    task: ModelTask[Any, Any], task_input: Any, fragment: str
) -> None:
    for text in ("", "Sure! Here it is.", "[]", '{"unexpected": 1}'):
        with pytest.raises(InvalidModelOutput):
            task.parse(text, task_input)


def test_the_consolidation_local_answer_is_the_statement_extractor() -> None:
    reply = RulesModel().propose(MEMORY_CHANGES.request(CONSOLIDATION))
    assert MEMORY_CHANGES.parse(reply.text, CONSOLIDATION) == (
        ProposedRemember("budget", "The user's budget is 1500 EUR.", "fact", ("i-01",)),
    )


def test_a_confession_gets_the_answer_the_seed_describes() -> None:
    mistake = CONFIDE_ANSWER.local_answer(ConfideInput("I broke the build."))
    assert "A mistake is part of the work" in mistake.answer
    assert "fix what you can" in mistake.answer
    assert CONFIDE_ANSWER.local_answer(ConfideInput("Just checking in.")).answer == CALM_ANSWER
    with pytest.raises(InvalidModelOutput) as raised:
        CONFIDE_ANSWER.parse('{"answer": "   "}', ConfideInput("x"))
    assert raised.value.path == ["answer"]


def test_learning_keeps_only_a_persons_own_words_as_facts() -> None:
    answer = LEARNING_CHANGES.local_answer(TURN)
    assert [(c.op, c.content, c.sources) for c in answer.changes] == [
        ("fact", "ana prefers window seats.", ["i-1"]),
        ("fact", "ana's budget is 1500 EUR.", ["i-1"]),
    ]
    request = LEARNING_CHANGES.request(TURN)
    assert '"actor": "ana"' in request.user
    assert '"outside_data": true' in request.user
    assert 'Topic counts over all valid entries: {"travel": 3}' in request.user


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"op": "fact", "content": "x", "topics": []}, ["changes", 0, "sources"]),
        (
            {"op": "observation", "content": "x", "confidence": 1.5, "topics": [], "sources": []},
            ["changes", 0, "confidence"],
        ),
        ({"op": "invalidate"}, ["changes", 0, "id"]),
        ({"op": "renameTopic", "from": "a"}, ["changes", 0, "to"]),
        ({"op": "merge", "id": "mem_1"}, ["changes", 0, "op"]),
    ],
)
def test_learning_changes_are_checked_for_shape(change: dict[str, Any], path: list[Any]) -> None:
    with pytest.raises(InvalidModelOutput) as raised:
        LEARNING_CHANGES.parse(json.dumps({"changes": [change]}), TURN)
    assert raised.value.path == path


def test_a_topic_rename_keeps_the_name_from() -> None:
    answer = LEARNING_CHANGES.parse(
        '{"changes": [{"op": "renameTopic", "from": "trips", "to": "travel"}]}', TURN
    )
    assert answer.model_dump(by_alias=True)["changes"] == [
        {"op": "renameTopic", "from": "trips", "to": "travel"}
    ]


def test_enrichment_leaves_the_input_unchanged_when_nothing_matches() -> None:
    entries = (
        VisibleEntry("mem_1", "Ana flies from Berlin."),
        VisibleEntry("mem_2", "Ana prefers window seats on flights.", ("travel",)),
    )
    nothing = ENRICHMENT.local_answer(EnrichmentInput("What is 2 + 2?", entries))
    assert (nothing.input, nothing.used) == (None, [])
    found = ENRICHMENT.local_answer(EnrichmentInput("Book flights to Lisbon.", entries))
    assert found.used == ["mem_2"]
    assert found.input is not None
    assert found.input.startswith("Book flights to Lisbon.")
    assert "window seats" in found.input
    with pytest.raises(InvalidModelOutput):
        ENRICHMENT.parse('{"input": null, "used": ["mem_1"]}', EnrichmentInput("x", entries))


@pytest.mark.parametrize(
    ("message", "title"),
    [
        ("what's the weather in Lisbon in May? and hotels", "What's the weather in Lisbon in"),
        ("  Plan   a trip.\nThen book it", "Plan a trip"),
        ("", UNTITLED),
        ("???", UNTITLED),
    ],
)
def test_a_local_title_is_the_first_words_of_the_first_message(message: str, title: str) -> None:
    assert title_from(message) == title


def test_the_observer_logs_messages_and_names_an_untitled_thread() -> None:
    answer = OBSERVATION.local_answer(OBSERVED)
    assert answer.observations == (
        "- user: Plan a trip to Lisbon in May. Budget 1500 EUR.\n"
        "- assistant: Lisbon in May: flights from 120 EUR."
    )
    assert answer.title == "Plan a trip to Lisbon in"
    assert answer.workingMemory is None
    titled = ObservationInput(OBSERVED.messages, title="Lisbon", thread_title=True)
    assert OBSERVATION.local_answer(titled).title is None


def test_the_working_memory_schema_is_embedded_in_the_observation_schema() -> None:
    json_memory = WorkingMemory("json", {"name": "Ana"}, schema=WM_SCHEMA)
    observed = ObservationInput(OBSERVED.messages, working_memory=json_memory)
    shape = OBSERVATION.schema(observed)["properties"]["workingMemory"]["anyOf"]
    assert shape[0]["properties"] == WM_SCHEMA["properties"]
    assert shape[0]["required"] == ["name", "seat"]
    assert shape[1] == {"type": "null"}
    # Markdown working memory (or none) is text.
    assert OBSERVATION.schema(OBSERVED)["properties"]["workingMemory"]["anyOf"][0] == {
        "type": "string"
    }
    good = '{"observations": "- x", "title": null, "workingMemory": {"name": "Ana", "seat": null}}'
    assert OBSERVATION.parse(good, observed).workingMemory == {"name": "Ana", "seat": None}
    text_memory = '{"observations": "- x", "title": null, "workingMemory": "# User"}'
    with pytest.raises(InvalidModelOutput) as raised:
        OBSERVATION.parse(text_memory, observed)
    assert raised.value.path == ["workingMemory"]
    with pytest.raises(InvalidModelOutput):
        OBSERVATION.parse(text_memory, OBSERVED)  # the observer does not manage it here


def test_reflection_condenses_without_losing_a_line() -> None:
    log = "- Ana flies on Tuesday.\n\n- ana flies on  tuesday.\n- Budget 1500 EUR."
    answer = REFLECTION.local_answer(ReflectionInput(log))
    assert answer.observations == "- Ana flies on Tuesday.\n- Budget 1500 EUR."
    with pytest.raises(InvalidModelOutput):
        REFLECTION.parse('{"observations": ""}', ReflectionInput(log))


def test_a_task_request_is_built_once_from_its_input() -> None:
    request = TITLE.request(TitleInput("Hello there", "Five words"), deadline_s=15)
    assert isinstance(request, ModelRequest)
    assert request.deadline_s == 15
    assert "Instructions for the title: Five words" in request.system
    assert request.user == "The first message:\nHello there"
    assert request.schema == {
        "type": "object",
        "properties": {"title": {"type": "string"}},
        "required": ["title"],
        "additionalProperties": False,
    }
