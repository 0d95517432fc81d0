"""Builders of seed 002 objects over HTTP (bots, channels, chats, turns) and the world of a
Bot, its readers and its memory Bot's scripted model."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.ports import ModelReply, Usage
from tests.conftest import Api, User
from tests.support.learning_doubles import ScriptedModel
from tests.support.workflow import wired_services


def error(answer: Any) -> tuple[int, str, list[Any]]:
    body = answer.json()["error"]
    return answer.status_code, body["_tag"], body["path"]


def make_bot(api: Api, owner: User, grants: dict[str, str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": "Helper"} | ({"grants": grants} if grants else {})
    answer = api.client.post("/v1/bots", json=body, headers=owner.headers)
    assert answer.status_code == 201, answer.text
    return dict(answer.json()["bot"])


def make_chat(api: Api, user: User, bot_id: str, **extra: Any) -> dict[str, Any]:
    answer = api.client.post("/v1/chats", json={"botId": bot_id, **extra}, headers=user.headers)
    assert answer.status_code == 201, answer.text
    return dict(answer.json()["chat"])


def make_channel(api: Api, creator: User, *members: User) -> dict[str, Any]:
    body = {"name": "team", "members": [m.id for m in members]}
    answer = api.client.post("/v1/channels", json=body, headers=creator.headers)
    assert answer.status_code == 201, answer.text
    return dict(answer.json()["channel"])


def turn(api: Api, user: User, chat_id: str, text: str, **extra: Any) -> dict[str, Any]:
    answer = api.client.post(
        f"/v1/chats/{chat_id}/turns", json={"input": text, **extra}, headers=user.headers
    )
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


MEMORY_MODEL = "openai/memory-bot"


HEARD = "I hear you. A mistake is part of the work: tell the person plainly and fix it."


class Script:
    """The memory Bot's model: an answer per task, each call recorded by task."""

    def __init__(self) -> None:
        self.answers: dict[str, Any] = {
            "confide_answer": {"answer": HEARD},
            "learning_changes": {"changes": []},
            "enrichment": {"input": None, "used": []},
        }
        self.calls: list[ModelRequest] = []
        self.delay_s = 0.0
        # The usage the provider confirms with each answer (None: none confirmed).
        self.usage: Usage | None = None

    def __call__(self, request: ModelRequest) -> str | ModelReply:
        self.calls.append(request)
        if self.delay_s:
            time.sleep(self.delay_s)
        answer = self.answers[request.task]
        if isinstance(answer, Exception):
            raise answer
        text = answer(request) if callable(answer) else json.dumps(answer)
        if self.usage is None:
            return str(text)
        return ModelReply(text=str(text), model=MEMORY_MODEL, usage=self.usage)

    def tasks(self) -> list[str]:
        return [call.task for call in self.calls]


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def services(settings: Any, adapters: Any, script: Script) -> Any:
    return scripted_services(settings, adapters, script)


def scripted_services(
    settings: Any, adapters: Any, script: Script, workflow: Any = None, **swap: Any
) -> Any:
    """Services whose memory Bot model is `script`, learning run inline unless a `workflow`
    is given."""
    model = ScriptedModel(name=MEMORY_MODEL, script=script)
    return wired_services(settings, adapters, {MEMORY_MODEL: model}, workflow, **swap)


class World:
    """Ana's organization, where Ben, Cy and Dee read Ana's Bot and Ana, Ben and Cy share a
    channel, and Olga's (`other`). With the memory Bot's `script`, Ana's organization names
    its model."""

    def __init__(self, api: Api, services: Any = None, script: Script | None = None) -> None:
        self.api = api
        self.services = services
        self.script = script
        self.open_turns: list[tuple[User, dict[str, Any], str]] = []
        self.org = api.org()
        self.other = api.org()
        self.ana = api.user(self.org)
        self.ben = api.user(self.org)
        self.cy = api.user(self.org)
        self.dee = api.user(self.org)
        self.olga = api.user(self.other)
        readers = {u.id: "read" for u in (self.ben, self.cy, self.dee)}
        self.bot = make_bot(api, self.ana, readers)
        self.channel = make_channel(api, self.ana, self.ben, self.cy)
        self.people = {u.id: u for u in (self.ana, self.ben, self.cy, self.dee, self.olga)}
        if script is not None:
            self.settings({"botMemoryModel": MEMORY_MODEL})

    def settings(self, patch: dict[str, Any], org: str | None = None) -> None:
        """Patch the settings of `org` (Ana's organization by default)."""
        answer = self.api.client.patch(
            f"/v1/organizations/{org or self.org}/settings", json=patch, headers=self.api.admin
        )
        assert answer.status_code == 200, answer.text

    def chat(self, user: User, **extra: Any) -> dict[str, Any]:
        return make_chat(self.api, user, self.bot["id"], **extra)

    def said(self, user: User, chat: dict[str, Any], text: str) -> str:
        """A turn of `user` in `chat`, left open; answers its input item's id."""
        started = turn(self.api, user, chat["id"], text)
        turn_id = started["turn"]["id"]
        self.open_turns.append((user, chat, turn_id))
        items = self.get(user, f"/v1/chats/{chat['id']}/items")
        mine = [i for i in items.json()["items"] if i["turnId"] == turn_id]
        return str(mine[0]["id"])

    def confide(self, user: User, chat: dict[str, Any], turn_id: str, text: str) -> Any:
        return self.api.client.post(
            f"/v1/chats/{chat['id']}/turns/{turn_id}/confide",
            json={"text": text},
            headers=user.headers,
        )

    def complete(self, user: User, chat: dict[str, Any], turn_id: str) -> None:
        answer = self.api.client.post(
            f"/v1/chats/{chat['id']}/turns/{turn_id}/complete", json={}, headers=user.headers
        )
        assert answer.status_code == 200, answer.text

    def taught(self, chat: dict[str, Any], *changes: Any) -> dict[str, Any]:
        """`changes` learned as the memory Bot learns: the Chat's open Turns complete, its
        owner confides in a Turn of their own and completes it, and the run that starts
        reads the Chat's unread items and applies the model's answer, `changes`. The run's
        execution as the Chat's owner reads it (`applied` and `rejected`)."""
        if self.script is None:
            raise TypeError("a World learns through its scripted memory Bot model")
        answer = {"changes": [c.model_dump(by_alias=True) for c in changes]}
        self.script.answers["learning_changes"] = answer
        for opened in [t for t in self.open_turns if t[1]["id"] == chat["id"]]:
            self.open_turns.remove(opened)
            self.complete(*opened)
        owner = self.people[chat["owner"]]
        turn_id = turn(self.api, owner, chat["id"], "Noted.")["turn"]["id"]
        confided = self.confide(owner, chat, turn_id, "Learn this.")
        assert confided.status_code == 200, confided.text
        self.complete(owner, chat, turn_id)
        newest = next(e for e in self.executions(owner) if e["chatId"] == chat["id"])
        assert newest["status"] == "succeeded", newest
        return newest

    def get(self, user: User, path: str) -> Any:
        return self.api.client.get(path, headers=user.headers)

    def executions(self, user: User) -> list[dict[str, Any]]:
        """The Bot's learning runs, newest first, as `user` reads them."""
        answer = self.get(user, f"/v1/bots/{self.bot['id']}/learning")
        assert answer.status_code == 200, answer.text
        return list(answer.json()["executions"])

    def page(self, user: User, tags: str | None = None) -> dict[str, Any]:
        """The Bot's memory as `user` reads it: its entries (with all `tags`) and version."""
        answer = self.get(
            user, f"/v1/bots/{self.bot['id']}/memory" + (f"?tags={tags}" if tags else "")
        )
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def memory(self, user: User) -> list[dict[str, Any]]:
        return list(self.page(user)["entries"])

    def ids(self, user: User) -> set[str]:
        return {e["id"] for e in self.memory(user)}

    def command(self, user: User, command: dict[str, Any]) -> Any:
        return self.api.client.post(
            f"/v1/bots/{self.bot['id']}/memory", json={"command": command}, headers=user.headers
        )

    def post(self, user: User, path: str, body: dict[str, Any]) -> Any:
        return self.api.client.post(
            f"/v1/bots/{self.bot['id']}/memory/{path}", json=body, headers=user.headers
        )


@pytest.fixture
def world(api: Api, services: Any, script: Script) -> World:
    return World(api, services, script)


def fact_from_person(request: ModelRequest) -> str:
    """A fact citing the first person item the request shows."""
    lines = [json.loads(line) for line in request.user.splitlines() if line.startswith("{")]
    person = next(line for line in lines if line.get("role") == "user")
    change = {"op": "fact", "content": "Ana takes the 8:10 train.", "topics": ["commute"]}
    return json.dumps({"changes": [change | {"sources": [person["id"]]}]})


def settings_of(world: World, user: User) -> Any:
    return world.get(user, f"/v1/bots/{world.bot['id']}/memory/bot")


def patch_settings(world: World, user: User, body: dict[str, Any]) -> Any:
    return world.api.client.patch(
        f"/v1/bots/{world.bot['id']}/memory/bot", json=body, headers=user.headers
    )
