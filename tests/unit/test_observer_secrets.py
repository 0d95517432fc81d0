"""The thread observer and reflector keep no secret line (the gate on model output's secret
rule, domain/model_gate.py), whether a model or `local/rules` answered."""

from __future__ import annotations

import json

from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.tasks.observation import (
    OBSERVATION,
    REFLECTION,
    ObservationInput,
    ReflectionInput,
)


def test_the_observer_and_reflector_keep_no_secret_line() -> None:
    said = ObservationInput(
        (EvidenceItem("m1", "user", "My wifi password is hunter2. I live in Oslo."),),
        thread_title=True,
    )
    local = OBSERVATION.local_answer(said)
    assert "hunter2" not in local.observations
    answer = json.dumps(
        {
            "observations": "- user lives in Oslo\n- user's password is hunter2",
            "title": "Password is hunter2",
            "workingMemory": None,
        }
    )
    parsed = OBSERVATION.parse(answer, said)
    assert (parsed.observations, parsed.title) == ("- user lives in Oslo", None)
    condensed = REFLECTION.parse(
        json.dumps({"observations": "- lives in Oslo\n- card 4111 1111 1111 1111"}),
        ReflectionInput("- lives in Oslo"),
    )
    assert condensed.observations == "- lives in Oslo"
    assert (
        "hunter2" not in REFLECTION.local_answer(ReflectionInput("- pw is hunter2!")).observations
    )
