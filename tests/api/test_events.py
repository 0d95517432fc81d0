"""The events feed over HTTP (API.md "Events"; seed 003): a client follows its thread's
creation, title and working memory, memory changes and execution ends, through
`GET /v1/events`, and sees nothing it may not see."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api
from tests.support.agents import org, remember, replying
from tests.support.events import TITLER, everything, feed, helper, person, services
from tests.support.learning_doubles import ScriptedModel
from tests.support.sessions import Client

__all__ = ["helper", "org", "services"]  # the fixtures this module uses


def activate(client: Client, agent: str, options: dict[str, Any]) -> None:
    saved = client.api.client.patch(
        f"/v1/agents/{agent}/draft",
        json={"memory": {"options": options}},
        headers=client.user.headers,
    )
    assert saved.status_code == 200, saved.text
    number = client.post(f"/v1/agents/{agent}/publish", {}).json()["version"]["number"]
    assert client.post(f"/v1/agents/{agent}/versions/{number}/activate", {}).status_code == 200


def thread_with_everything(owner: Client, agent: str) -> str:
    """A thread created, titled by the first answer, and its working memory written."""
    activate(owner, agent, {"generateTitle": {"model": TITLER}, "workingMemory": True})
    created = owner.post("/v1/threads", {"agentId": agent})
    assert created.status_code == 201, created.text
    thread = str(created.json()["thread"]["id"])
    messages = [{"role": "user", "content": "Plan Lisbon"}, {"role": "assistant", "content": "Ok"}]
    saved = owner.post(f"/v1/threads/{thread}/messages", {"messages": messages})
    assert saved.status_code == 200, saved.text
    put = owner.api.client.put(
        f"/v1/threads/{thread}/working-memory",
        json={"content": "# User\n- Name: Ana"},
        headers=owner.user.headers,
    )
    assert put.status_code == 200, put.text
    return thread


def test_a_client_follows_its_thread_and_no_one_else_sees_it(api: Api, org: str) -> None:
    owner, colleague = person(api, org), person(api, org)
    stranger = person(api, api.org())
    agent = owner.agent(members=[colleague.user.id])
    thread = thread_with_everything(owner, agent)
    assert owner.get(f"/v1/threads/{thread}").json()["thread"]["title"] == "Lisbon in May"

    seen = everything(owner)
    mine = [e for e in seen if e["object"].get("threadId") == thread]
    changes = [e for e in mine if e["type"] != "execution.ended"]
    assert [e["type"] for e in changes] == [
        "thread.created",
        "thread.updated",
        "working_memory.updated",
    ]
    # The title's background run ended: its execution, as the thread's learning lists it.
    runs = owner.get(f"/v1/threads/{thread}/learning").json()["executions"]
    assert runs
    ended = [e["object"] for e in mine if e["type"] == "execution.ended"]
    assert ended == [{"executionId": r["id"], "threadId": thread} for r in reversed(runs)]
    for event in changes:
        # Ids only: never the title or the notes.
        assert event["object"] == {
            "threadId": thread,
            "agentId": agent,
            "resourceId": owner.user.id,
        }
        assert event["id"].startswith("evt_")
        assert isinstance(event["at"], int)
    # A member of the agent in the same organization, and another organization: nothing.
    assert everything(colleague) == []
    assert everything(stranger) == []


def test_memory_changes_and_execution_ends_reach_their_readers(
    api: Api, org: str, helper: ScriptedModel
) -> None:
    owner, member, outsider = person(api, org), person(api, org), person(api, org)
    agent = owner.agent(members=[member.user.id])
    session = owner.session(agent)["id"]
    # A person's change of session memory.
    view = owner.view(session)
    remembered = owner.command(
        session, {"_tag": "Remember", "key": "budget", "content": "1500 EUR", "kind": "fact"}
    )
    assert remembered.status_code == 200, remembered.text
    assert view["revision"] != owner.view(session)["revision"]
    # A turn: the agent's helper learns from it (memory.changed, execution.ended).
    helper.script = replying(remember("tests-first", "Run the tests first.", "procedure", "i-01"))
    turn = owner.turn(session, "Always run the tests before you report that work is done.")
    assert turn.status_code == 200, turn.text
    learned = owner.get(f"/v1/agents/{agent}/learning").json()["executions"]
    assert [e["status"] for e in learned] == ["succeeded"]

    seen = everything(owner)
    kinds = {(e["type"], tuple(sorted(e["object"]))) for e in seen}
    assert ("memory.changed", ("sessionId",)) in kinds
    assert ("memory.changed", ("agentId",)) in kinds
    ended = [e for e in seen if e["type"] == "execution.ended"]
    assert {"executionId": learned[0]["id"], "agentId": agent, "sessionId": session} in [
        e["object"] for e in ended
    ]
    # The member reads the agent (its memory and learning), not the owner's session.
    theirs = everything(member)
    assert {e["object"].get("agentId") for e in theirs} == {agent}
    assert not any(e["object"] == {"sessionId": session} for e in theirs)
    assert everything(outsider) == []


def test_paging_with_after_answers_each_event_once_in_order(api: Api, org: str) -> None:
    owner = person(api, org)
    agent = owner.agent()
    made = [owner.post("/v1/threads", {"agentId": agent}).json()["thread"]["id"] for _ in range(5)]
    pages: list[list[dict[str, Any]]] = []
    after = None
    for _page in range(4):
        page = feed(owner, after, limit=2)
        pages.append(page["events"])
        after = page["next"]
    assert [len(p) for p in pages] == [2, 2, 1, 0]
    events = [e for p in pages for e in p]
    assert [e["object"]["threadId"] for e in events] == made
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    # Nothing new: the last cursor answers nothing again; a new change comes once.
    assert feed(owner, after)["events"] == []
    later = owner.post("/v1/threads", {"agentId": agent}).json()["thread"]["id"]
    page = feed(owner, after)
    assert [e["object"]["threadId"] for e in page["events"]] == [later]
    assert feed(owner, page["next"])["events"] == []


def test_hidden_events_still_move_the_cursor(api: Api, org: str) -> None:
    owner, colleague = person(api, org), person(api, org)
    agent = owner.agent()
    for _ in range(3):
        owner.post("/v1/threads", {"agentId": agent})
    page = feed(colleague, limit=3)
    assert page["events"] == []
    mine = colleague.agent()
    created = colleague.post("/v1/threads", {"agentId": mine}).json()["thread"]["id"]
    shown = feed(colleague, page["next"], limit=3)["events"]
    assert [e["object"]["threadId"] for e in shown] == [created]


def test_a_malformed_cursor_is_a_400_and_one_not_issued_to_the_caller_a_404(
    api: Api, org: str
) -> None:
    owner, colleague = person(api, org), person(api, org)
    stranger = person(api, api.org())

    def refused(who: Client, params: dict[str, Any], field: str, status: int = 400) -> None:
        answer = api.client.get("/v1/events", params=params, headers=who.user.headers)
        assert answer.status_code == status, answer.text
        assert answer.json()["error"]["path"] == [field]

    # Outside the cursor's pattern (the schema says so): malformed.
    for bad in ["%%%", "a=b", "x" * 7000, ""]:
        refused(owner, {"after": bad}, "after")
    # In the pattern, but issued by this feed to nobody, or to someone else: unknown.
    for unknown in ["0", "not-a-cursor", "eyJ4IjoxfQ", "e30"]:
        refused(owner, {"after": unknown}, "after", 404)
    cursor = feed(owner)["next"]
    for other in (colleague, stranger):
        refused(other, {"after": cursor}, "after", 404)
    for limit in (0, 101, -1):
        refused(owner, {"limit": limit}, "limit")
    assert feed(owner, cursor, limit=100)["events"] == []


def test_the_admin_token_has_no_feed(api: Api) -> None:
    answer = api.client.get("/v1/events", headers=api.admin)
    assert answer.status_code == 403, answer.text


def test_bot_memory_changes_reach_the_bots_readers_in_their_own_organization(
    api: Api, services: Any
) -> None:
    from tests.support.bots import World

    world = World(api, services)
    nobody = api.user(world.org)  # of the organization, without a grant on the bot
    bot = world.bot["id"]

    def bot_events(user: Any) -> list[dict[str, Any]]:
        return [e for e in everything(Client(api, user)) if e["object"].get("botId") == bot]

    remembered = world.command(world.ana, {"_tag": "Remember", "content": "Ana likes tea."})
    assert remembered.status_code == 200, remembered.text
    assert [e["type"] for e in bot_events(world.ben)] == ["memory.changed"]
    assert bot_events(world.ben)[0]["object"] == {"botId": bot}
    assert bot_events(nobody) == []
    assert bot_events(world.olga) == []
    # A linked organization's change is in its own feed, never in the bot's home feed.
    linked = api.client.post(
        f"/v1/bots/{bot}/links",
        json={"organizationId": world.other, "grants": {world.olga.id: "write"}},
        headers=world.ana.headers,
    )
    assert linked.status_code == 201, linked.text
    assert bot_events(world.olga) == []
    away = world.command(world.olga, {"_tag": "Remember", "content": "Olga's note."})
    assert away.status_code == 200, away.text
    assert [e["type"] for e in bot_events(world.olga)] == ["memory.changed"]
    assert len(bot_events(world.ana)) == 1
