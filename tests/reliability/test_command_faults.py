"""Every command and write route, under every fault at every AWS call it makes
(tests/reliability/runner.py says what each outcome must be)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

from tests.reliability.runner import Command, Finding, Report, run_matrix
from tests.reliability.world import World


def _learning_skipped(ref: Any, got: Any, call: str) -> bool:
    """A Turn whose learning could not start is stored all the same: "skipped", with the
    reason named (`learningReason`, API.md) when the session's own learning was skipped."""
    turn = got["turn"]
    if any(turn[k] not in (ref["turn"][k], "skipped") for k in ("learning", "agentLearning")):
        return False
    if turn["learning"] != ref["turn"]["learning"] and not turn.get("learningReason"):
        return False
    same = {k: ref["turn"].get(k) for k in ("learning", "agentLearning", "learningReason")}
    return {**got, "turn": {**turn, **same}} == ref


def _learning_record(key: tuple[str, str]) -> bool:
    """What starting learning writes after a Turn's commit: the skipped execution agent
    learning records (service/agent_learning.py: "failures here never fail it"), the read
    position and the `execution.ended` event it keeps with it, and the claim of a workflow
    name (adapters/stepfunctions.py: a start that failed leaves the Turn's learning
    "skipped")."""
    pk, sk = key
    agent_ended = " execution.ended " in sk and '"executionId": "agent-' in sk
    return (
        pk.startswith(("LEARN#agent#", "LEARN#NAME#"))
        or sk.startswith("LEARNPOS#")
        or (pk.startswith("EVENTS#") and agent_ended)
    )


def _people_count(key: tuple[str, str]) -> bool:
    """The organization's count of people in the admin's list, moved after the person's own
    commit (persistence/organizations.py, ADR 0086): a fault may leave it as it was."""
    return key[0] == "ORGS#"


def _guarded(refs: dict[str, str], command: dict[str, Any]) -> dict[str, Any]:
    return {"expected": refs["head"], "revision": int(refs["revision"]), "command": command}


TURN = {"items": [{"role": "user", "content": "My hotel is the Adlon."}]}

COMMANDS = [
    Command("create-agent", "POST", "/v1/agents", "owner", lambda r: {"name": "planner"}),
    Command("create-session", "POST", "/v1/sessions", "owner", lambda r: {"agentId": r["agent"]}),
    Command(
        "turn",
        "POST",
        "/v1/sessions/{session}/turns",
        "owner",
        lambda r: TURN,
        _learning_skipped,
        _learning_record,
    ),
    Command(
        "turn-guarded",
        "POST",
        "/v1/sessions/{session}/turns",
        "owner",
        lambda r: {**TURN, "expected": r["head"], "revision": int(r["revision"])},
        _learning_skipped,
        _learning_record,
    ),
    Command(
        "remember",
        "POST",
        "/v1/sessions/{session}/memory",
        "owner",
        lambda r: _guarded(
            r, {"_tag": "Remember", "key": "hotel", "content": "The Adlon.", "kind": "fact"}
        ),
    ),
    Command(
        "forget",
        "POST",
        "/v1/sessions/{session}/memory",
        "owner",
        lambda r: _guarded(r, {"_tag": "Forget", "key": "budget"}),
    ),
    Command(
        "configure",
        "POST",
        "/v1/sessions/{session}/memory",
        "owner",
        lambda r: _guarded(r, {"_tag": "Configure", "use": False}),
    ),
    Command(
        "refresh",
        "POST",
        "/v1/sessions/{session}/memory",
        "owner",
        lambda r: _guarded(r, {"_tag": "Refresh"}),
    ),
    Command("fork", "POST", "/v1/sessions/{session}/fork", "owner", lambda r: {}),
    Command(
        "create-agent-memory",
        "POST",
        "/v1/agent_memories",
        "owner",
        lambda r: {
            "category": "preference",
            "content": "Prefers express shipping.",
            "entity": {"id": "acct-7", "type": "account", "name": "Acme GmbH"},
            "importance": 0.9,
        },
    ),
    Command(
        "update-agent-memory",
        "PATCH",
        "/v1/agent_memories/{memory}",
        "owner",
        lambda r: {"content": "Orders 60 pallets a month.", "importance": 0.7},
    ),
    Command("delete-agent-memory", "DELETE", "/v1/agent_memories/{memory}", "owner"),
    Command(
        "agent-remember",
        "POST",
        "/v1/agents/{agent}/memory",
        "owner",
        lambda r: {
            "expected": int(r["agent_version"]),
            "command": {
                "_tag": "Remember",
                "key": "tone",
                "content": "Answer briefly.",
                "kind": "preference",
            },
        },
    ),
    Command(
        "agent-forget",
        "POST",
        "/v1/agents/{agent}/memory",
        "owner",
        lambda r: {
            "expected": int(r["agent_version"]),
            "command": {"_tag": "Forget", "key": "tests-first"},
        },
    ),
    Command(
        "promote", "POST", "/v1/sessions/{subagent}/promote", "owner", lambda r: {"name": "scout"}
    ),
    Command(
        "create-org", "POST", "/v1/admin/organizations", "admin", lambda r: {"name": "Initech"}
    ),
    Command(
        "create-user",
        "POST",
        "/v1/admin/users",
        "admin",
        lambda r: {"organizationId": r["org"], "role": "member"},
        best_effort=_people_count,
    ),
    Command("issue-token", "POST", "/v1/admin/users/{spare_id}/tokens", "boss", lambda r: {}),
    Command("revoke-token", "DELETE", "/v1/admin/tokens/{spare_tokenPrefix}", "boss"),
    Command(
        "patch-settings",
        "PATCH",
        "/v1/organizations/{org}/settings",
        "boss",
        lambda r: {"memory": {"generate": False}, "helperModel": "local/rules"},
    ),
]


def build_base(world: World) -> None:
    """Two organizations, their people, an agent, a session with a turn and a remembered
    fact, an agent memory; then saved."""
    org = world.add_org("Acme")
    world.refs["org"] = org
    world.add_user(org, "owner")
    world.add_user(org, "boss", role="admin")
    world.add_user(org, "spare")
    world.add_user(world.add_org("Globex"), "outsider")
    agent = world.call("POST", "/v1/agents", "owner", {"name": "helper"})
    world.refs["agent"] = agent.body["agent"]["id"]
    session = world.call("POST", "/v1/sessions", "owner", {"agentId": world.refs["agent"]})
    world.refs["session"] = sid = session.body["session"]["id"]
    items = [{"role": "user", "content": "Remember that my budget is 1500 EUR."}]
    world.call("POST", f"/v1/sessions/{sid}/turns", "owner", {"items": items})
    view = world.call("GET", f"/v1/sessions/{sid}", "owner").body["session"]
    remember = {"_tag": "Remember", "key": "budget", "content": "1500 EUR", "kind": "fact"}
    body = {"expected": view["head"], "revision": view["revision"], "command": remember}
    view = world.call("POST", f"/v1/sessions/{sid}/memory", "owner", body).body["session"]
    world.refs["head"], world.refs["revision"] = view["head"], str(view["revision"])
    command = {
        "_tag": "Remember",
        "key": "tests-first",
        "content": "Run the tests first.",
        "kind": "procedure",
    }
    agent_memory = world.call(
        "POST",
        f"/v1/agents/{world.refs['agent']}/memory",
        "owner",
        {"expected": 0, "command": command},
    )
    world.refs["agent_version"] = str(agent_memory.body["version"])
    sub = world.call(
        "POST", "/v1/sessions", "owner", {"agentId": world.refs["agent"], "kind": "subagent"}
    ).body["session"]
    world.refs["subagent"] = sub["id"]
    lasting = {**command, "key": "deploy", "content": "Deploy on Tuesdays.", "kind": "decision"}
    body = {"expected": sub["head"], "revision": sub["revision"], "command": lasting}
    world.call("POST", f"/v1/sessions/{sub['id']}/memory", "owner", body)
    memory = world.call(
        "POST",
        "/v1/agent_memories",
        "owner",
        {"category": "fact", "content": "Orders 40 pallets a month.", "importance": 0.5},
    )
    world.refs["memory"] = memory.body["id"]
    world.save()


@pytest.fixture(scope="module")
def base(world: World) -> World:
    build_base(world)
    return world


@dataclass(frozen=True)
class Known:
    """A finding pinned while its fix is open. Strict: once fixed, the entry must go (the
    test says so)."""

    id: str
    commands: str  # a regular expression on the command's name
    call: str  # ... on the call ("dynamodb.GetItem")
    what: str  # ... on the finding's text

    def matches(self, finding: Finding) -> bool:
        return bool(
            re.fullmatch(self.commands, finding.command)
            and re.fullmatch(self.call, finding.call)
            and re.search(self.what, finding.what)
        )


# Findings not fixed yet (none today).
KNOWN: list[Known] = []


@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_a_fault_at_any_call_leaves_nothing_half_written(base: World, command: Command) -> None:
    report: Report = run_matrix(base, command)
    assert report.cases > 0
    unknown = [f for f in report.findings if not any(k.matches(f) for k in KNOWN)]
    assert not unknown, "\n".join(map(str, unknown))
    for known in KNOWN:
        if re.fullmatch(known.commands, command.name) and any(
            re.fullmatch(known.call, call) for call in report.calls
        ):
            assert any(known.matches(f) for f in report.findings), (
                f"{known.id} no longer happens for {command.name}: remove it from KNOWN"
            )
