"""Threads over HTTP (API.md, "Threads"; seed 003): messages, lastMessages, titles,
working memory in both formats and scopes, readOnly, and isolation between users."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agent_memory.persistence.keys import resource_pk
from tests.conftest import Api
from tests.support.threads import (
    TITLER,
    World,
    agent_of,
    assistant,
    make_run_world,
    services,
    titler,
    user,
    world,
)

__all__ = ["services", "titler", "world"]  # the fixtures this module uses


def test_messages_are_saved_with_ids_and_read_back_in_order(world: World) -> None:
    thread = world.thread()
    item = {"type": "message", "id": "item_1", "content": [{"type": "input_text", "text": "hi"}]}
    saved = world.save(thread, {**user("Hello"), "item": item}, assistant("Hi there"))
    assert saved.status_code == 200, saved.text
    ids = saved.json()["messageIds"]
    assert len(ids) == 2
    messages = world.get(f"/v1/threads/{thread}/messages").json()["messages"]
    assert [m["id"] for m in messages] == ids
    assert [m["content"] for m in messages] == ["Hello", "Hi there"]
    assert messages[0]["item"] == item
    assert "item" not in messages[1]
    latest = world.get(f"/v1/threads/{thread}/messages?limit=1").json()["messages"]
    assert [m["content"] for m in latest] == ["Hi there"]


def test_remove_the_latest_and_clear(world: World) -> None:
    thread = world.thread()
    world.save(thread, user("one"), assistant("two"), user("three"))
    removed = world.api.client.delete(
        f"/v1/threads/{thread}/messages/last", headers=world.owner.headers
    )
    assert removed.json()["message"]["content"] == "three"
    contents = [
        m["content"] for m in world.get(f"/v1/threads/{thread}/messages").json()["messages"]
    ]
    assert contents == ["one", "two"]
    cleared = world.api.client.delete(f"/v1/threads/{thread}/messages", headers=world.owner.headers)
    assert cleared.status_code == 204
    assert world.get(f"/v1/threads/{thread}/messages").json()["messages"] == []
    empty = world.api.client.delete(
        f"/v1/threads/{thread}/messages/last", headers=world.owner.headers
    )
    assert empty.json() == {"message": None}


@pytest.mark.parametrize("last", [0, 10, 200])
def test_the_context_holds_the_last_n_messages(world: World, last: int) -> None:
    world.activate({"lastMessages": last})
    thread = world.thread()
    for start in range(0, 210, 50):
        batch = [user(f"m{n}") for n in range(start, min(start + 50, 210))]
        assert world.save(thread, *batch).status_code == 200
    context = world.context(thread).json()
    contents = [m["content"] for m in context["messages"]]
    assert contents == [f"m{n}" for n in range(210 - last, 210)]
    assert context["recalled"] == []
    assert context["observations"] is None


def test_before_any_activation_threads_get_the_platform_defaults(world: World) -> None:
    thread = world.thread()
    world.save(thread, *[user(f"m{n}") for n in range(15)])
    assert len(world.context(thread).json()["messages"]) == 10
    # A draft is not what threads follow: only an activated version is.
    world.api.client.patch(
        f"/v1/agents/{world.agent}/draft",
        json={"memory": {"options": {"lastMessages": 2}}},
        headers=world.owner.headers,
    )
    assert len(world.context(thread).json()["messages"]) == 10
    world.activate({"lastMessages": 2})
    assert len(world.context(thread).json()["messages"]) == 2


def test_the_first_answer_names_the_thread_from_the_first_message(world: World) -> None:
    thread = world.thread()
    world.save(thread, user("Plan my trip to Lisbon in May. Budget 2000 EUR."))
    assert world.get(f"/v1/threads/{thread}").json()["thread"]["title"] is None
    world.save(thread, assistant("Sure."))
    title = world.get(f"/v1/threads/{thread}").json()["thread"]["title"]
    assert title == "Plan my trip to Lisbon in"
    listed = world.get(f"/v1/threads?agentId={world.agent}").json()["threads"]
    assert [(t["id"], t["title"]) for t in listed] == [(thread, title)]


def test_generate_title_off_leaves_the_thread_untitled(world: World) -> None:
    world.activate({"generateTitle": False})
    thread = world.thread()
    world.save(thread, user("Plan my trip"), assistant("Sure."))
    assert world.get(f"/v1/threads/{thread}").json()["thread"]["title"] is None
    assert learning(world, thread) == []


def test_a_client_names_its_thread_and_keeps_its_metadata(world: World) -> None:
    client, headers = world.api.client, world.owner.headers
    body = {"agentId": world.agent, "title": "Trip", "metadata": {"mastra": {"id": "t-1"}}}
    created = client.post("/v1/threads", json=body, headers=headers)
    assert created.status_code == 201, created.text
    thread = created.json()["thread"]
    assert (thread["title"], thread["metadata"]) == ("Trip", {"mastra": {"id": "t-1"}})
    # A title the client set is the thread's: the title step leaves it.
    world.save(thread["id"], user("Plan my trip to Lisbon in May."), assistant("Sure."))
    assert world.get(f"/v1/threads/{thread['id']}").json()["thread"]["title"] == "Trip"
    renamed = client.patch(
        f"/v1/threads/{thread['id']}", json={"metadata": {"n": 2}}, headers=headers
    )
    assert renamed.json()["thread"]["title"] == "Trip"
    assert renamed.json()["thread"]["metadata"] == {"n": 2}
    client.patch(f"/v1/threads/{thread['id']}", json={"title": "Lisbon"}, headers=headers)
    listed = world.get(f"/v1/threads?agentId={world.agent}").json()["threads"]
    assert [(t["title"], t["metadata"]) for t in listed] == [("Lisbon", {"n": 2})]
    assert world.get("/v1/threads").json()["threads"][0]["metadata"] == {"n": 2}
    untitled = world.get(f"/v1/threads/{world.thread()}").json()["thread"]
    assert (untitled["title"], untitled["metadata"]) == (None, None)
    too_big = {"metadata": {"x": "y" * 9000}}
    refused = client.patch(f"/v1/threads/{thread['id']}", json=too_big, headers=headers)
    assert refused.status_code == 400
    assert refused.json()["error"]["path"] == ["metadata"]
    empty = client.patch(f"/v1/threads/{thread['id']}", json={"title": ""}, headers=headers)
    assert empty.status_code == 400
    assert empty.json()["error"]["path"] == ["title"]


def test_threads_are_listed_newest_first(world: World) -> None:
    first = world.thread()
    time.sleep(0.005)  # a later millisecond: newest first is by creation time
    second = world.thread()
    listed = world.get(f"/v1/threads?agentId={world.agent}&resourceId={world.owner.id}")
    assert [t["id"] for t in listed.json()["threads"]] == [second, first]
    other = world.get(f"/v1/threads?resourceId={world.member.id}")
    assert other.status_code == 403


def test_threads_page_newest_first_with_a_cursor(world: World) -> None:
    other_agent = agent_of(world.api, world.owner)
    made = []
    for n in range(5):
        time.sleep(0.002)  # a later millisecond: newest first is by creation time
        agent = world.agent if n % 2 == 0 else other_agent
        answer = world.api.client.post(
            "/v1/threads", json={"agentId": agent}, headers=world.owner.headers
        )
        made.append((answer.json()["thread"]["id"], agent))
    newest = [thread for thread, _agent in reversed(made)]

    def pages(query: str) -> list[tuple[list[str], bool]]:
        seen, after = [], ""
        while True:
            body = world.get(f"/v1/threads?limit=2{query}{after}").json()
            ids = [t["id"] for t in body["threads"]]
            seen.append((ids, body["has_more"]))
            if not body["has_more"]:
                return seen
            after = f"&starting_after={ids[-1]}"

    # Across agents, then one agent's: newest first, pages of 2, `has_more` on all but last.
    assert pages("") == [(newest[0:2], True), (newest[2:4], True), (newest[4:], False)]
    mine = [thread for thread, agent in reversed(made) if agent == world.agent]
    assert pages(f"&agentId={world.agent}") == [(mine[0:2], True), (mine[2:], False)]
    assert world.get("/v1/threads").json()["has_more"] is False
    # A cursor is one of the caller's threads (another's or none: 404, as the thread
    # itself), of the agent listed (else 404: no position in that list); limit is 1..100.
    theirs = world.thread(world.member)
    for query, status in (
        (f"starting_after={theirs}", 404),
        ("starting_after=th_missing", 404),
        (f"agentId={world.agent}&starting_after={newest[1]}", 404),
    ):
        bad = world.get(f"/v1/threads?{query}")
        assert bad.status_code == status, query
        assert bad.json()["error"]["path"] == ["starting_after"]
    for limit in (0, 101):
        assert world.get(f"/v1/threads?limit={limit}").status_code == 400


def test_read_only_saves_nothing(world: World) -> None:
    thread = world.thread()
    world.activate({"readOnly": True, "workingMemory": True})
    saved = world.save(thread, user("remember this"), assistant("I will not."))
    assert saved.json() == {"messageIds": []}
    assert world.get(f"/v1/threads/{thread}/messages").json()["messages"] == []
    # Nothing saved: no title, no background run.
    assert world.get(f"/v1/threads/{thread}").json()["thread"]["title"] is None
    assert learning(world, thread) == []
    put = world.api.client.put(
        f"/v1/threads/{thread}/working-memory",
        json={"content": "# Me"},
        headers=world.owner.headers,
    )
    assert put.status_code == 409
    assert put.json()["error"]["_tag"] == "ThreadConflict"


def test_markdown_working_memory_in_resource_scope_is_shared_by_the_users_threads(
    world: World,
) -> None:
    world.activate({"workingMemory": {"template": "# User\n- Name:"}})
    first, second = world.thread(), world.thread()
    before = world.get(f"/v1/threads/{first}/working-memory").json()
    assert before == {"scope": "resource", "format": "markdown", "content": None}
    notes = "# User\n- Name: Ada"
    put = world.api.client.put(
        f"/v1/threads/{first}/working-memory", json={"content": notes}, headers=world.owner.headers
    )
    assert put.status_code == 200, put.text
    assert world.get(f"/v1/threads/{second}/working-memory").json()["content"] == notes
    context = world.context(second).json()
    assert notes in context["system"]
    assert [t["name"] for t in context["tools"]] == ["updateWorkingMemory"]
    # Another user's thread with the same agent never sees them.
    theirs = world.thread(world.member)
    assert world.get(f"/v1/threads/{theirs}/working-memory", world.member).json()["content"] is None


def test_json_working_memory_in_thread_scope_follows_its_schema(world: World) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "additionalProperties": False,
    }
    world.activate({"workingMemory": {"scope": "thread", "schema": schema}})
    first, second = world.thread(), world.thread()
    url = f"/v1/threads/{first}/working-memory"
    bad = world.api.client.put(url, json={"content": {"age": "old"}}, headers=world.owner.headers)
    assert bad.status_code == 400
    assert bad.json()["error"]["path"] == ["content", "age"]
    text = world.api.client.put(url, json={"content": "Ada"}, headers=world.owner.headers)
    assert text.status_code == 400
    good = world.api.client.put(url, json={"content": {"name": "Ada"}}, headers=world.owner.headers)
    assert good.json() == {"scope": "thread", "format": "json", "content": {"name": "Ada"}}
    assert world.get(f"/v1/threads/{second}/working-memory").json()["content"] is None
    tools = world.context(first).json()["tools"]
    assert tools[0]["parameters"]["properties"]["content"] == schema


def test_the_observer_managing_the_notes_makes_them_read_only(world: World) -> None:
    world.activate(
        {
            "workingMemory": True,
            "observationalMemory": {"observation": {"manageWorkingMemory": True}},
        }
    )
    thread = world.thread()
    put = world.api.client.put(
        f"/v1/threads/{thread}/working-memory", json={"content": "x"}, headers=world.owner.headers
    )
    assert put.status_code == 409
    context = world.context(thread).json()
    assert context["tools"] == []
    assert "read-only" in context["system"]


def test_working_memory_off_answers_409_and_no_system_text(world: World) -> None:
    thread = world.thread()
    put = world.api.client.put(
        f"/v1/threads/{thread}/working-memory", json={"content": "x"}, headers=world.owner.headers
    )
    assert put.status_code == 409
    context = world.context(thread).json()
    assert context["system"] == ""
    assert context["tools"] == []
    assert context["workingMemory"] is None


def test_a_thread_belongs_to_its_user_alone(world: World, api: Api) -> None:
    world.activate({"workingMemory": True})
    thread = world.thread()
    world.save(thread, user("my secret plan"))
    outsider = api.user(api.org())
    admin = api.user(world.owner.org_id, role="admin")
    for other in (world.member, admin, outsider):
        for url in ("", "/messages", "/working-memory", "/learning"):
            assert world.get(f"/v1/threads/{thread}{url}", other).status_code == 404
        assert world.context(thread, other).status_code == 404
        assert world.save(thread, user("x"), user=other).status_code == 404
        patched = api.client.patch(
            f"/v1/threads/{thread}", json={"title": "x"}, headers=other.headers
        )
        assert patched.status_code == 404
        assert api.client.delete(f"/v1/threads/{thread}", headers=other.headers).status_code == 404
    assert world.get(f"/v1/threads?agentId={world.agent}", world.member).json()["threads"] == []
    for other in (world.member, admin, outsider):
        assert world.get("/v1/threads", other).json()["threads"] == []
        assert world.get(f"/v1/threads?starting_after={thread}", other).status_code == 404
    named = api.client.post(
        "/v1/threads",
        json={"agentId": world.agent, "resourceId": world.owner.id},
        headers=world.member.headers,
    )
    assert named.status_code == 403
    foreign_agent = api.client.post(
        "/v1/threads", json={"agentId": world.agent}, headers=outsider.headers
    )
    assert foreign_agent.status_code == 404


def test_no_message_title_metadata_or_note_is_stored_in_the_clear(
    world: World, adapters: Any
) -> None:
    world.activate({"workingMemory": True})
    thread = world.thread()
    world.api.client.patch(
        f"/v1/threads/{thread}",
        json={"title": "Robinson's order", "metadata": {"customer": "Robinson"}},
        headers=world.owner.headers,
    )
    world.save(
        thread,
        {**user("Robinson orders 40 pallets"), "item": {"note": "Robinson item"}},
        assistant("Noted"),
    )
    world.api.client.put(
        f"/v1/threads/{thread}/working-memory",
        json={"content": "Robinson prefers mornings"},
        headers=world.owner.headers,
    )
    rows = adapters.store.query(f"THREAD#{thread}").records
    rows += adapters.store.query(resource_pk(world.owner.org_id, world.owner.id)).records
    assert len(rows) >= 5
    assert b"Robinson" not in repr(rows).encode()


def learning(world: World, thread: str) -> list[dict[str, Any]]:
    answer = world.get(f"/v1/threads/{thread}/learning")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["executions"])


def test_generate_title_asks_its_own_model_with_its_instructions(world: World, titler: Any) -> None:
    world.activate({"generateTitle": {"model": TITLER, "instructions": "Three words, no verbs."}})
    thread = world.thread()
    world.save(thread, user("Plan my trip to Lisbon in May."), assistant("Sure."))
    assert world.get(f"/v1/threads/{thread}").json()["thread"]["title"] == "Lisbon in May"
    (asked,) = titler.calls
    assert asked.task == "title"
    assert "Three words, no verbs." in asked.system
    assert "Plan my trip to Lisbon in May." in asked.user
    [run] = learning(world, thread)
    assert (run["kind"], run["status"], run["model"]) == ("thread-title", "succeeded", TITLER)
    assert run["applied"] == [{"key": "title", "op": "title"}]
    # Titled once: later answers do not ask again, nor start another run.
    world.save(thread, user("And June?"), assistant("Also fine."))
    assert len(titler.calls) == 1
    assert len(learning(world, thread)) == 1


def test_a_failing_title_model_leaves_the_thread_untitled_and_the_run_failed(
    world: World, titler: Any
) -> None:
    from tests.support.learning_doubles import failing

    titler.script = failing("timeout", retryable=True)
    world.activate({"generateTitle": {"model": TITLER}})
    thread = world.thread()
    saved = world.save(thread, user("Plan my trip to Lisbon in May."), assistant("Sure."))
    assert saved.status_code == 200
    assert len(saved.json()["messageIds"]) == 2
    assert world.get(f"/v1/threads/{thread}").json()["thread"]["title"] is None
    [run] = learning(world, thread)
    assert (run["kind"], run["status"]) == ("thread-title", "failed")
    assert run["error"]["type"] == "ModelTimeout"
    contents = [
        m["content"] for m in world.get(f"/v1/threads/{thread}/messages").json()["messages"]
    ]
    assert contents == ["Plan my trip to Lisbon in May.", "Sure."]
    # The next answer tries again, and a model that answers names it.
    titler.script = lambda request: '{"title": "Lisbon in May"}'
    world.save(thread, assistant("Anything else?"))
    assert world.get(f"/v1/threads/{thread}").json()["thread"]["title"] == "Lisbon in May"
    assert [r["status"] for r in learning(world, thread)] == ["succeeded", "failed"]


def test_a_save_of_many_messages_starts_one_title_run(world: World) -> None:
    thread = world.thread()
    batch = [m for n in range(20) for m in (user(f"question {n}"), assistant(f"answer {n}"))]
    world.save(thread, *batch)
    [run] = learning(world, thread)
    assert run["status"] == "succeeded"
    assert world.get(f"/v1/threads/{thread}").json()["thread"]["title"] == "Question 0"


def test_the_newest_messages_that_fit_the_answer_are_kept_in_order() -> None:
    from agent_memory.domain.threads import Message, message_size, newest_within

    messages = [Message(f"msg_{n}", "user", "x" * 1000, n) for n in range(10)]
    one = message_size(messages[0])
    kept = newest_within(messages, budget=3 * one + one // 2)
    assert [m.id for m in kept] == ["msg_7", "msg_8", "msg_9"]
    assert newest_within(messages) == messages


def test_a_save_that_loses_a_race_renumbers_and_keeps_both(
    world: World, services: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_memory.domain.threads import Message

    thread = world.thread()
    repo = services.threads.repo
    original = repo.append
    raced: list[int] = []

    def append(stored_thread: Any, seq: int, messages: Any, now_ms: int) -> None:
        if not raced:
            # Another save numbers its message first, between our read and our write.
            raced.append(seq)
            original(stored_thread, seq, [Message("msg_other", "user", "first", now_ms)], now_ms)
        original(stored_thread, seq, messages, now_ms)

    monkeypatch.setattr(repo, "append", append)
    saved = world.save(thread, user("second"))
    assert saved.status_code == 200, saved.text
    contents = [
        m["content"] for m in world.get(f"/v1/threads/{thread}/messages").json()["messages"]
    ]
    assert contents == ["first", "second"]


def test_make_runs_local_runner_titles_the_thread_in_the_background(tmp_path: Any) -> None:
    """`make run`'s wiring: the save answers at once, the runner titles after."""
    with make_run_world(tmp_path) as local:
        thread = local.thread()
        saved = local.save(thread, user("Plan my trip to Lisbon in May."), assistant("Sure."))
        assert saved.status_code == 200, saved.text
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            runs = learning(local, thread)
            if runs and runs[0]["status"] != "running":
                break
            time.sleep(0.02)
        assert [(r["kind"], r["status"]) for r in runs] == [("thread-title", "succeeded")]
        title = local.get(f"/v1/threads/{thread}").json()["thread"]["title"]
        assert title == "Plan my trip to Lisbon in"


def test_the_state_machine_titles_the_thread_on_the_embedded_aws(
    settings: Any, adapters: Any, local_aws: Any
) -> None:
    """The deployed path: the save starts the template's state machine (moto runs the step
    handlers in process), which titles the thread after the answer."""
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import build_services, step_services

    session, local = local_aws
    real = build_services(settings, adapters)
    step_services.use(real)
    sfn = session.client("stepfunctions")
    try:
        with TestClient(create_app(lambda: real), raise_server_exceptions=False) as http:
            api = Api(http)
            owner = api.user(api.org())
            deployed = World(api, owner, owner, agent_of(api, owner))
            thread = deployed.thread()
            deployed.save(thread, user("Plan my trip to Lisbon in May."), assistant("Sure."))
            deadline = time.monotonic() + 20
            runs: list[dict[str, Any]] = []
            while time.monotonic() < deadline:
                runs = learning(deployed, thread)
                if runs and runs[0]["status"] not in ("running", "waiting"):
                    break
                time.sleep(0.05)
            assert [(r["kind"], r["status"]) for r in runs] == [("thread-title", "succeeded")]
            title = deployed.get(f"/v1/threads/{thread}").json()["thread"]["title"]
            assert title == "Plan my trip to Lisbon in"
    finally:
        for listed in sfn.list_executions(stateMachineArn=local.state_machine_arn)["executions"]:
            while (
                sfn.describe_execution(executionArn=listed["executionArn"])["status"] == "RUNNING"
            ):
                time.sleep(0.05)
        step_services.reset()
