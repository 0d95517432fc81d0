"""Seed 003's memory options: every option's range, shorthand and default (API.md)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.memory_options import (
    DEFAULT_TEMPLATE,
    effective,
    effective_options,
    validate_memory,
)
from tests.support.options import BAD

P = ["memory", "options"]


@pytest.mark.parametrize(("options", "path"), BAD)
def test_a_bad_option_is_a_400_naming_its_path(
    options: dict[str, Any], path: list[str | int]
) -> None:
    with pytest.raises(ValidationFailed) as raised:
        validate_memory({"options": options})
    assert raised.value.path == [*P, *path]


def test_an_unknown_key_of_the_memory_block_is_named() -> None:
    with pytest.raises(ValidationFailed) as raised:
        validate_memory({"options": {}, "extra": 1})
    assert raised.value.path == ["memory", "extra"]


def test_the_platform_defaults() -> None:
    options = effective(None)["options"]
    assert options["lastMessages"] == 10
    assert options["generateTitle"] == {"enabled": True, "model": None, "instructions": None}
    assert options["semanticRecall"] == {
        "enabled": False,
        "topK": 5,
        "messageRange": {"before": 2, "after": 2},
        "scope": "resource",
    }
    assert options["workingMemory"]["enabled"] is False
    assert options["workingMemory"]["template"] == DEFAULT_TEMPLATE
    assert options["observationalMemory"]["enabled"] is False
    assert options["readOnly"] is False


def test_true_is_enabled_with_every_default() -> None:
    options = effective_options({"observationalMemory": True, "workingMemory": True})
    observer = options["observationalMemory"]
    assert observer["enabled"] is True
    assert observer["observation"] == {
        "model": None,
        "messageTokens": 30_000,
        "bufferTokens": 0.15,
        "bufferActivation": 0.8,
        "blockAfter": 1.9,
        "bufferOnIdle": False,
        "manageWorkingMemory": False,
        "threadTitle": False,
        "instruction": None,
        "activateAfterIdle": False,
    }
    assert observer["reflection"]["observationTokens"] == 40_000
    assert observer["reflection"]["bufferActivation"] == 0.5
    assert options["workingMemory"] == {
        "enabled": True,
        "scope": "resource",
        "template": DEFAULT_TEMPLATE,
        "schema": None,
        "agentManaged": True,
    }


def test_an_object_without_enabled_means_on_and_false_means_off() -> None:
    assert effective_options({"semanticRecall": {"topK": 3}})["semanticRecall"]["enabled"]
    assert not effective_options({"generateTitle": False})["generateTitle"]["enabled"]
    assert not effective_options({"workingMemory": {"enabled": False}})["workingMemory"]["enabled"]


@pytest.mark.parametrize(
    ("sent", "ms"),
    [
        ("5m", 300_000),
        ("1hr", 3_600_000),
        ("2h", 7_200_000),
        ("30s", 30_000),
        ("1d", 86_400_000),
        ("250ms", 250),
        (1500, 1500),
        ("auto", "auto"),
        (False, False),
    ],
)
def test_durations(sent: Any, ms: Any) -> None:
    observer = effective_options({"observationalMemory": {"activateAfterIdle": sent}})[
        "observationalMemory"
    ]
    assert observer["activateAfterIdle"] == ms
    # Observations inherit it; reflections do not.
    assert observer["observation"]["activateAfterIdle"] == ms
    assert observer["reflection"]["activateAfterIdle"] is False


def test_observation_idle_false_overrides_the_top_level() -> None:
    observer = effective_options(
        {
            "observationalMemory": {
                "activateAfterIdle": "5m",
                "observation": {"activateAfterIdle": False},
            }
        }
    )["observationalMemory"]
    assert observer["observation"]["activateAfterIdle"] is False


def test_shorthands() -> None:
    options = effective_options(
        {"lastMessages": False, "semanticRecall": {"messageRange": 4}, "generateTitle": True}
    )
    assert options["lastMessages"] == 0
    assert options["semanticRecall"]["messageRange"] == {"before": 4, "after": 4}
    assert options["generateTitle"]["enabled"] is True
    assert effective_options({"lastMessages": 200})["lastMessages"] == 200


def test_the_observer_managing_the_notes_makes_them_read_only_for_the_agent() -> None:
    options = effective_options(
        {
            "workingMemory": {"scope": "resource", "agentManaged": True},
            "observationalMemory": {"observation": {"manageWorkingMemory": True}},
        }
    )
    assert options["workingMemory"]["agentManaged"] is False


def test_the_reflector_follows_the_observer_model() -> None:
    observer = effective_options(
        {"observationalMemory": {"observation": {"model": "openai/gpt-4o-mini"}}}
    )["observationalMemory"]
    assert observer["reflection"]["model"] == "openai/gpt-4o-mini"


def test_a_schema_replaces_the_template() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    working = effective_options({"workingMemory": {"schema": schema}})["workingMemory"]
    assert working["schema"] == schema
    assert working["template"] is None


def test_memory_null_is_the_defaults_and_is_saved_as_null() -> None:
    assert validate_memory(None) is None
    assert validate_memory({"options": {"lastMessages": 3}}) == {"options": {"lastMessages": 3}}


_bools = st.booleans()
_share = st.floats(min_value=0.01, max_value=1.0)
_duration = st.one_of(
    st.just(False), st.just("auto"), st.integers(0, 10**9), st.sampled_from(["5m", "1hr", "2d"])
)
_options = st.fixed_dictionaries(
    {},
    optional={
        "lastMessages": st.one_of(st.just(False), st.integers(0, 200)),
        "generateTitle": st.one_of(
            _bools,
            st.fixed_dictionaries(
                {}, optional={"enabled": _bools, "instructions": st.text(max_size=20)}
            ),
        ),
        "semanticRecall": st.one_of(
            _bools,
            st.fixed_dictionaries(
                {},
                optional={
                    "topK": st.integers(1, 30),
                    "messageRange": st.one_of(
                        st.integers(0, 10),
                        st.fixed_dictionaries(
                            {"before": st.integers(0, 10), "after": st.integers(0, 10)}
                        ),
                    ),
                    "scope": st.sampled_from(["resource", "thread"]),
                },
            ),
        ),
        "workingMemory": st.one_of(
            st.just(True),
            st.fixed_dictionaries(
                {},
                optional={
                    "scope": st.sampled_from(["resource", "thread"]),
                    "template": st.text(max_size=30),
                    "agentManaged": _bools,
                },
            ),
        ),
        "observationalMemory": st.one_of(
            _bools,
            st.fixed_dictionaries(
                {},
                optional={
                    "activateAfterIdle": _duration,
                    "retrieval": st.one_of(_bools, st.fixed_dictionaries({"vector": _bools})),
                    "observation": st.fixed_dictionaries(
                        {},
                        optional={
                            "messageTokens": st.integers(1_000, 1_000_000),
                            "bufferTokens": st.one_of(
                                st.floats(0.01, 0.99), st.integers(1, 100_000)
                            ),
                            "bufferActivation": _share,
                            "blockAfter": st.floats(1, 10),
                            "bufferOnIdle": _bools,
                            "threadTitle": _bools,
                            "activateAfterIdle": _duration,
                        },
                    ),
                    "reflection": st.fixed_dictionaries(
                        {},
                        optional={
                            "observationTokens": st.integers(1_000, 1_000_000),
                            "bufferActivation": _share,
                            "activateAfterIdle": _duration,
                        },
                    ),
                },
            ),
        ),
        "readOnly": _bools,
    },
)


@settings(max_examples=150, deadline=None)
@given(_options)
def test_effective_is_a_fixed_point(options: dict[str, Any]) -> None:
    once = effective({"options": options})
    assert effective(once) == once
    # The effective block is itself a valid block to save.
    assert validate_memory(once) == once
