"""The events feed as a test reads it, and an organization whose agents have a scripted helper."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api
from tests.support.agents import HELPER, replying
from tests.support.learning_doubles import ScriptedModel
from tests.support.sessions import Client
from tests.support.workflow import wired_services

TITLER = "openai/titler"


@pytest.fixture
def helper() -> ScriptedModel:
    return ScriptedModel(name=HELPER, script=replying())


@pytest.fixture
def services(settings: Any, adapters: Any, helper: ScriptedModel) -> Any:
    """Learning run inline at each start; a scripted title model and learning helper."""
    from agent_memory.adapters.rules_model import RulesModel

    titler = ScriptedModel(name=TITLER, script=lambda request: '{"title": "Lisbon in May"}')
    return wired_services(
        settings, adapters, {TITLER: titler, HELPER: helper, "local/rules": RulesModel()}
    )


def person(api: Api, org: str) -> Client:
    return Client(api, api.user(org))


def feed(client: Client, after: str | None = None, limit: int | None = None) -> dict[str, Any]:
    query = {"after": after, "limit": limit}
    params = {k: v for k, v in query.items() if v is not None}
    answer = client.api.client.get("/v1/events", params=params, headers=client.user.headers)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def everything(client: Client, limit: int = 100) -> list[dict[str, Any]]:
    """Every event the client may see now, page by page (stops at an empty page)."""
    events: list[dict[str, Any]] = []
    after = None
    for _page in range(50):
        page = feed(client, after, limit)
        if not page["events"] and after is not None:
            return events
        events += page["events"]
        after = page["next"]
    raise AssertionError("the feed never ends")
