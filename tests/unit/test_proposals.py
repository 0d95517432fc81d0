"""Parsing a learning model's answer (API.md, "What a learning model returns")."""

from __future__ import annotations

import json

import pytest

from agent_memory.domain.errors import DomainError
from agent_memory.domain.proposals import (
    CHANGES_SCHEMA,
    ProposedForget,
    ProposedRemember,
    parse_changes,
)
from agent_memory.domain.tasks.answers import MAX_CHANGES, InvalidModelOutput

API_EXAMPLE = """{"changes": [
  {"op": "remember", "key": "budget", "content": "The trip budget is 1500 EUR.", "kind": "fact",
   "sources": ["i-02"]},
  {"op": "forget", "key": "old-hotel", "sources": ["i-03"]}
]}"""


def test_parses_the_api_example_into_typed_changes() -> None:
    changes = parse_changes(API_EXAMPLE)
    assert changes == (
        ProposedRemember("budget", "The trip budget is 1500 EUR.", "fact", ("i-02",)),
        ProposedForget("old-hotel", ("i-03",)),
    )


def test_no_changes_is_a_valid_answer() -> None:
    assert parse_changes('{"changes": []}') == ()


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"changes": []}\n```',
        '```\n{"changes": []}\n```',
        '  \n```json\n{"changes": []}```  ',
    ],
)
def test_a_json_object_in_a_code_fence_is_accepted(text: str) -> None:
    assert parse_changes(text) == ()


def test_keys_are_kept_as_written_and_sources_deduplicated() -> None:
    text = json.dumps(
        {
            "changes": [
                {
                    "op": "remember",
                    "key": " Trip-Budget ",
                    "content": " x ",
                    "kind": "fact",
                    "sources": ["i-1", "i-1", "i-2"],
                }
            ]
        }
    )
    (change,) = parse_changes(text)
    assert change == ProposedRemember("Trip-Budget", "x", "fact", ("i-1", "i-2"))


def test_a_key_the_pool_holds_is_accepted_outside_the_key_alphabet() -> None:
    text = json.dumps({"changes": [{"op": "forget", "key": "my hotel", "sources": ["i-1"]}]})
    with pytest.raises(InvalidModelOutput):
        parse_changes(text)
    assert parse_changes(text, known_keys={"my hotel"}) == (ProposedForget("my hotel", ("i-1",)),)


def test_an_empty_source_list_is_left_to_the_consolidation_rules() -> None:
    text = '{"changes": [{"op": "forget", "key": "a", "sources": []}]}'
    assert parse_changes(text) == (ProposedForget("a", ()),)


def _one(change: dict[str, object]) -> str:
    return json.dumps({"changes": [change]})


REMEMBER = {"op": "remember", "key": "k", "content": "c", "kind": "fact", "sources": ["i-1"]}


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("", []),
        ("I think the budget is 1500 EUR.", []),
        ("[]", []),
        ('"changes"', []),
        ('{"changes": [], "notes": "x"}', ["notes"]),
        ("{}", ["changes"]),
        ('{"changes": {}}', ["changes"]),
        ('{"changes": ["remember"]}', ["changes", 0]),
        (_one({**REMEMBER, "op": "update"}), ["changes", 0, "op"]),
        (_one({k: v for k, v in REMEMBER.items() if k != "op"}), ["changes", 0, "op"]),
        (_one({k: v for k, v in REMEMBER.items() if k != "content"}), ["changes", 0, "content"]),
        (_one({**REMEMBER, "why": "because"}), ["changes", 0, "why"]),
        (
            _one({"op": "forget", "key": "k", "sources": ["i"], "kind": "fact"}),
            ["changes", 0, "kind"],
        ),
        (_one({**REMEMBER, "key": ""}), ["changes", 0, "key"]),
        (_one({**REMEMBER, "key": "has space"}), ["changes", 0, "key"]),
        (_one({**REMEMBER, "key": "x" * 101}), ["changes", 0, "key"]),
        (_one({**REMEMBER, "key": 7}), ["changes", 0, "key"]),
        (_one({**REMEMBER, "content": "  "}), ["changes", 0, "content"]),
        (_one({**REMEMBER, "content": 1500}), ["changes", 0, "content"]),
        (_one({**REMEMBER, "content": "x" * 8001}), ["changes", 0, "content"]),
        (_one({**REMEMBER, "kind": "rumour"}), ["changes", 0, "kind"]),
        (_one({**REMEMBER, "sources": "i-1"}), ["changes", 0, "sources"]),
        (_one({**REMEMBER, "sources": ["i-1", 2]}), ["changes", 0, "sources", 1]),
        (_one({**REMEMBER, "sources": [""]}), ["changes", 0, "sources", 0]),
    ],
)
def test_anything_else_is_invalid_output_naming_the_place(text: str, path: list[object]) -> None:
    with pytest.raises(InvalidModelOutput) as raised:
        parse_changes(text)
    assert raised.value.path == path
    assert raised.value.message
    assert isinstance(raised.value, DomainError)


def test_too_many_changes_for_one_step_is_invalid() -> None:
    text = json.dumps({"changes": [REMEMBER] * (MAX_CHANGES + 1)})
    with pytest.raises(InvalidModelOutput, match="at most"):
        parse_changes(text)


def test_the_schema_describes_exactly_the_two_change_shapes() -> None:
    items = CHANGES_SCHEMA["properties"]["changes"]["items"]["anyOf"]
    shapes = {shape["properties"]["op"]["enum"][0]: shape for shape in items}
    assert set(shapes) == {"remember", "forget"}
    assert shapes["remember"]["required"] == ["op", "key", "content", "kind", "sources"]
    assert shapes["forget"]["required"] == ["op", "key", "sources"]
    # OpenAI strict mode: every object lists all its properties and forbids others.
    for shape in [CHANGES_SCHEMA, *items]:
        assert shape["additionalProperties"] is False
        assert set(shape["required"]) == set(shape["properties"])
