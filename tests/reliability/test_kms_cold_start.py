"""The first content a process seals or opens resolves the key alias (kms.DescribeKey) and
builds the Encryption SDK's clients. A KMS failure there must be a clean 503 like any other
KMS failure, and the same process must serve the retry (test_command_faults.py keeps one
warm cipher per run, so it covers this call here)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.reliability import faults as F
from tests.reliability.world import World

REMEMBER = {"_tag": "Remember", "key": "hotel", "content": "The Adlon.", "kind": "fact"}


@pytest.fixture(scope="module")
def cold(world: World) -> World:
    org = world.add_org("Acme")
    world.add_user(org, "owner")
    agent = world.call("POST", "/v1/agents", "owner", {"name": "helper"}).body["agent"]["id"]
    session = world.call("POST", "/v1/sessions", "owner", {"agentId": agent}).body["session"]
    world.refs["session"] = session["id"]
    world.refs["head"], world.refs["revision"] = session["head"], str(session["revision"])
    world.save()
    return world


def _remember(world: World) -> tuple[int, object]:
    body = {
        "expected": world.refs["head"],
        "revision": int(world.refs["revision"]),
        "command": REMEMBER,
    }
    answer = world.call("POST", f"/v1/sessions/{world.refs['session']}/memory", "owner", body)
    return answer.status, answer.body


@pytest.mark.parametrize(
    "fault", [F.KMS_THROTTLED, F.KMS_INTERNAL, F.KMS_TIMEOUT, F.TIMEOUT], ids=lambda f: f.name
)
def test_a_kms_failure_on_the_first_use_of_the_key_is_a_clean_503(
    cold: World, fault: F.Fault
) -> None:
    cold.restore()
    cold.cipher = None  # a cold process: the next request builds the cipher
    cold.rebuild(0)
    before = cold.rows()
    armed = cold.faults.arm(replace(fault, operations=("DescribeKey",)))

    status, body = _remember(cold)
    assert armed.hits
    assert (status, cold.rows()) == (503, before), body

    cold.faults.reset()
    status, body = _remember(cold)
    assert status == 200, body
