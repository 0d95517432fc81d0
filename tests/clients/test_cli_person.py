"""`agent-memory` as a person uses it: a `list` for every collection, and memory read and
changed from the command line, against the local service."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory_client import Client
from agent_memory_client.cli import main
from tests.clients.conftest import LocalService


def _cli(capsys: pytest.CaptureFixture[str], service: LocalService, token: str, *argv: str) -> Any:
    code = main(["--url", service.url, "--token", token, *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_a_person_lists_every_collection_and_changes_each_memory(
    capsys: pytest.CaptureFixture[str], local_service: LocalService
) -> None:
    _org, _user, token = local_service.user()
    with Client(base_url=local_service.url, token=token) as ana:
        agents = [ana.create_agent("helper").id, ana.create_agent("planner").id]
        session = ana.create_session(agents[0], model=None).id
        thread = ana.create_thread(agents[0]).id
        bot = ana.create_bot("assistant").id
        channel = ana.create_channel("team").id
        chats = [ana.create_chat(bot).id, ana.create_chat(bot, channel_id=channel).id]
        memory = ana.create_agent_memory("Orders 40 pallets a month.").id

    def ids(*argv: str) -> list[str]:
        answer = _cli(capsys, local_service, token, *argv)
        return [o["id"] for o in answer[argv[0]]]

    assert ids("agents", "list") == agents[::-1]
    assert ids("sessions", "list", agents[0]) == [session]
    assert ids("threads", "list", "--agent", agents[0]) == [thread]
    assert ids("bots", "list") == [bot]
    assert ids("channels", "list") == [channel]
    assert ids("chats", "list", "--bot", bot) == chats[::-1]
    assert ids("memories", "list") == [memory]
    assert len(_cli(capsys, local_service, token, "tokens", "list")["tokens"]) == 1

    def memory_of(scope: str, owner: str) -> Any:
        return _cli(capsys, local_service, token, "memory", scope, "get", owner)

    for scope, owner in (("session", session), ("agent", agents[0])):
        _cli(capsys, local_service, token, "memory", scope, "remember", owner, "tone", "Be brief.")
        assert memory_of(scope, owner)["entries"]["tone"]["content"] == "Be brief."
        _cli(capsys, local_service, token, "memory", scope, "forget", owner, "tone")
        # A forgotten fact stays in the history, retracted (seed 000).
        assert memory_of(scope, owner)["entries"]["tone"]["status"] == "retracted"

    pinned = _cli(
        capsys,
        local_service,
        token,
        "memory",
        "bot",
        "remember",
        bot,
        "Likes tea.",
        "--tags",
        "food",
    )["entry"]
    entries = _cli(capsys, local_service, token, "memory", "bot", "get", bot, "--tags", "food")
    assert [(e["id"], e["content"]) for e in entries["entries"]] == [(pinned["id"], "Likes tea.")]
    _cli(capsys, local_service, token, "memory", "bot", "forget", bot, pinned["id"])
    after = memory_of("bot", bot)["entries"]
    assert [e["status"] for e in after if e["id"] == pinned["id"]] == ["retracted"]
