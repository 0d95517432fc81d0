"""A Bot learning on the embedded AWS's state machine, with its model scripted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agent_memory.api.app import create_app
from tests.conftest import Api, User
from tests.support.bots import MEMORY_MODEL, Script, fact_from_person, make_bot, make_chat, turn
from tests.support.state_machine import Workflow, workflow


@pytest.fixture
def wf(local_aws: Any, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workflow]:
    with workflow(local_aws, settings, monkeypatch, model=MEMORY_MODEL, notes=False) as flow:
        yield flow


@pytest.fixture
def script(wf: Workflow) -> Script:
    script = Script()
    script.answers["learning_changes"] = fact_from_person
    wf.model.script = script
    return script


class Bot:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.org = api.org()
        self.ana = api.user(self.org)
        answer = api.client.patch(
            f"/v1/organizations/{self.org}/settings",
            json={"botMemoryModel": MEMORY_MODEL},
            headers=api.admin,
        )
        assert answer.status_code == 200, answer.text
        self.bot = make_bot(api, self.ana)
        self.chat = make_chat(api, self.ana, self.bot["id"])

    def said(self, user: User, text: str) -> str:
        return str(turn(self.api, user, self.chat["id"], text)["turn"]["id"])

    def post(self, user: User, path: str, body: dict[str, Any]) -> Any:
        return self.api.client.post(path, json=body, headers=user.headers)

    def confide(self, turn_id: str, text: str) -> Any:
        path = f"/v1/chats/{self.chat['id']}/turns/{turn_id}/confide"
        return self.post(self.ana, path, {"text": text})

    def complete(self, turn_id: str) -> None:
        path = f"/v1/chats/{self.chat['id']}/turns/{turn_id}/complete"
        assert self.post(self.ana, path, {}).status_code == 200

    def executions(self) -> list[dict[str, Any]]:
        answer = self.api.client.get(
            f"/v1/bots/{self.bot['id']}/learning", headers=self.ana.headers
        )
        assert answer.status_code == 200, answer.text
        return list(answer.json()["executions"])

    def memory(self) -> list[dict[str, Any]]:
        answer = self.api.client.get(f"/v1/bots/{self.bot['id']}/memory", headers=self.ana.headers)
        return list(answer.json()["entries"])


@pytest.fixture
def bot(wf: Workflow) -> Iterator[Bot]:
    with TestClient(create_app(lambda: wf.services), raise_server_exceptions=False) as client:
        yield Bot(Api(client))
