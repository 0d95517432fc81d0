"""The Python client against a real local service (`make run`'s server), and its retry rule."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from typing import Any

import httpx
import pytest

from agent_memory_client import (
    AsyncClient,
    Client,
    NotFound,
    Throttled,
    Unauthorized,
    Unavailable,
    ValidationError,
    VersionConflict,
    models,
)
from tests.clients.conftest import ROOT, LocalService, run_example

README = ROOT / "clients" / "python" / "README.md"


@pytest.fixture(scope="module")
def member(local_service: LocalService) -> tuple[str, str, str]:
    return local_service.user()


@pytest.fixture
def client(local_service: LocalService, member: tuple[str, str, str]) -> Any:
    with Client(base_url=local_service.url, token=member[2]) as c:
        yield c


def test_the_readme_quickstart_runs_against_the_local_service(
    local_service: LocalService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = README.read_text()
    assert text.index("## Quickstart") < text.index("```python"), "the README opens with it"
    code = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert code is not None
    _org, _user, token = local_service.user()
    run_example(code.group(1), local_service, token, monkeypatch)
    out = capsys.readouterr().out
    assert "0.9 preference: The user prefers metric units." in out
    assert "learning: started" in out
    assert "Our trip budget is 1500 EUR." in out
    # What it saved is there for the same token, and the one it deleted is gone.
    with Client(base_url=local_service.url, token=token) as c:
        assert [m.content for m in c.iter_agent_memories()] == ["The user lives in Lyon."]


def test_errors_carry_the_api_code_and_path(local_service: LocalService, client: Client) -> None:
    with pytest.raises(ValidationError) as invalid:
        client.create_agent_memory("", "fact")
    assert invalid.value.code == "ValidationError"
    assert invalid.value.path == ["content"]
    assert invalid.value.status == 400
    with pytest.raises(NotFound) as missing:
        client.get_agent("no-such-agent")
    assert missing.value.code == "NotFound"
    with (
        Client(base_url=local_service.url, token="amk_wrong") as stranger,
        pytest.raises(Unauthorized),
    ):
        stranger.list_agent_memories()


def test_paged_lists_walk_every_page(client: Client) -> None:
    agent = client.create_agent("pager")
    made = [client.create_session(agent.id, model=None).id for _ in range(5)]
    assert [s.id for s in client.iter_sessions(agent.id, page_size=2)] == made[::-1]
    assert next(a.id for a in client.iter_agents(page_size=1)) == agent.id


def test_update_agent_memory_reads_again_after_a_lost_race(client: Client) -> None:
    agent = client.create_agent("racer")
    calls: list[int] = []

    def build(memory: models.AgentMemory) -> models.AgentRemember:
        calls.append(memory.version)
        if len(calls) == 1:  # someone else writes between our read and our write
            client.agent_memory_command(
                agent.id,
                models.AgentRemember(key="tone", content="Be brief.", kind="preference"),
                expected=memory.version,
            )
        return models.AgentRemember(key="units", content="Use metric units.", kind="preference")

    memory = client.update_agent_memory(agent.id, build)
    assert calls == [calls[0], calls[0] + 1]
    assert {k: e.content for k, e in memory.entries.items()} == {
        "tone": "Be brief.",
        "units": "Use metric units.",
    }
    # The log, one change a page, newest first.
    log = list(client.iter_agent_memory_log(agent.id, page_size=1))
    assert [(c.by, c.keys) for c in log] == [("person", ["units"]), ("person", ["tone"])]
    assert log[0].version > log[1].version
    with pytest.raises(VersionConflict):
        client.update_agent_memory(
            agent.id, lambda _m: models.AgentForget(key="never-there"), attempts=2
        )


def test_update_session_memory_reads_again_after_a_lost_race(client: Client) -> None:
    session = client.create_session(client.create_agent("notes").id, model=None)
    seen: list[int] = []

    def build(now: models.Session, _memory: models.SessionMemory) -> models.RememberCommand:
        seen.append(now.revision)
        if len(seen) == 1:
            client.post_turn(session.id, [{"role": "user", "content": "hello"}])
        return models.RememberCommand(key="budget", content="1500 EUR", kind="fact")

    after = client.update_session_memory(session.id, build)
    assert len(seen) == 2
    assert seen[1] > seen[0]
    assert client.get_session_memory(session.id).entries["budget"].content == "1500 EUR"
    assert after.revision > seen[1]


def test_the_async_client_has_the_same_surface(
    local_service: LocalService, member: tuple[str, str, str]
) -> None:
    async def scenario() -> list[str]:
        async with AsyncClient(base_url=local_service.url, token=member[2]) as c:
            made = await c.create_agent_memory("Async note.", "fact", importance=0.3)
            contents = [m.content async for m in c.iter_agent_memories(page_size=1)]
            await c.delete_agent_memory(made.id)
            with pytest.raises(NotFound):
                await c.get_agent_memory_object(made.id)
            return contents

    assert "Async note." in asyncio.run(scenario())


def _scripted(*answers: httpx.Response) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return httpx.MockTransport(handler), seen


def _throttled(retry_after: str | None) -> httpx.Response:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    body = {"error": {"_tag": "Throttled", "message": "slow down", "path": []}}
    return httpx.Response(429, json=body, headers=headers)


def test_429_and_503_are_retried_after_what_retry_after_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    transport, seen = _scripted(
        _throttled("2"), httpx.Response(503), httpx.Response(200, json={"status": "ok"})
    )
    waits: list[float] = []
    monkeypatch.setattr("time.sleep", waits.append)
    with Client(base_url="http://svc", token="t", transport=transport, backoff=0.5) as c:
        assert c.health().status == "ok"
    assert len(seen) == 3
    assert waits[0] == 2.0  # Retry-After
    assert 0.25 <= waits[1] <= 1.0  # backoff (0.5 * 2) with jitter
    assert seen[0].headers["Authorization"] == "Bearer t"


def test_retries_stop_at_max_retries_with_the_typed_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("time.sleep", lambda _s: None)
    transport, seen = _scripted(*[_throttled("1") for _ in range(3)])
    with (
        Client(base_url="http://svc", token="t", transport=transport, max_retries=2) as c,
        pytest.raises(Throttled) as throttled,
    ):
        c.health()
    assert len(seen) == 3
    assert throttled.value.retry_after == 1.0
    transport, seen = _scripted(httpx.Response(503, text="busy"))
    with (
        Client(base_url="http://svc", token="t", transport=transport, max_retries=0) as c,
        pytest.raises(Unavailable),
    ):
        c.health()


def test_the_sync_client_is_generated_from_the_async_one() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "clients" / "python" / "unasync.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, "run `python clients/python/unasync.py`"


def test_a_turn_is_completed_with_the_bots_last_words(client: Client) -> None:
    bot = client.create_bot("Helper")
    chat = client.create_chat(bot.id)
    turn = client.start_chat_turn(chat.id, "Which train do I take?").turn
    done = client.complete_chat_turn(
        chat.id, turn.id, items=[{"role": "assistant", "content": "The 8:10 from platform 2."}]
    )
    assert done.status == "completed"
    history = client.chat_items(chat.id)
    assert [(i.role, i.content) for i in history] == [
        ("user", "Which train do I take?"),
        ("assistant", "The 8:10 from platform 2."),
    ]


def test_a_service_key_acts_for_each_person_of_its_organization(
    local_service: LocalService,
) -> None:
    """A platform's backend: one key, a person per call (`acting_for`) or per client
    (`act_as`), and what one person saves is that person's alone."""
    _org, key = local_service.platform("ana", "ben")
    with Client(base_url=local_service.url, token=key) as platform:
        ana, ben = platform.acting_for("ana"), platform.acting_for("ben")
        agent = ana.create_agent("Trip")
        with pytest.raises(NotFound):
            ben.get_agent(agent.id)
        assert ana.get_agent(agent.id).owner == "ana"
    with Client(base_url=local_service.url, token=key, act_as="ben") as ben_only:
        assert ben_only.create_agent("Mine").owner == "ben"
