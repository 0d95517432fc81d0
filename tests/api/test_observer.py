"""Observational memory over HTTP (seed 003, "The observer"; API.md, "Threads"): buffering
in the background (one observer call per buffer, never per message), activation past
`messageTokens` with `bufferActivation`, `blockAfter` (synchronous, and past its deadline
raw history), `bufferOnIdle`, idle activation, `manageWorkingMemory`, `threadTitle`, the
reflector, the recall tool, and isolation between users.

The learning workflow runs inline (the real LearningService steps and the observer's pool
on moto); the observer is a scripted model. Every message below is exactly 100 tokens by
the service's count (a tag, 94 one-token words and the role framing), so thresholds are exact.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from agent_memory.domain.observation import message_tokens
from agent_memory.domain.threads import Message, RecalledWindow
from tests.support.observer import (
    OBSERVER,
    REFLECTOR,
    Observed,
    Stack,
    firsts,
    observed,
    stack,
    turn,
    words,
)

__all__ = ["observed", "stack"]  # the fixtures this module uses


def test_a_message_counts_as_the_tests_say() -> None:
    assert message_tokens(words("question12")) == 100


def test_the_observer_buffers_every_buffer_tokens_not_every_message(observed: Observed) -> None:
    observed.options({"messageTokens": 1000, "bufferTokens": 300})
    thread = observed.world.thread()
    observed.turns(thread, 1)
    assert observed.script.calls == []  # 200 tokens: under the buffer interval
    observed.turns(thread, 2, 3, 4)
    # 800 tokens: one call at 400 (turns 1-2) and one at 800 (turns 3-4).
    assert observed.script.tasks() == ["observation", "observation"]
    log = observed.log(thread)
    assert "chunk 1: question1 answer1 question2 answer2" in log["log"]
    assert "chunk 2: question3 answer3 question4 answer4" in log["log"]
    assert log["tokens"] > 0
    assert log["reflections"] == 0
    # Under messageTokens: raw history stays, the buffered chunks wait in reserve.
    context = observed.context(thread)
    assert context["observations"] is None
    assert len(context["messages"]) == 8


def test_a_failed_observation_loses_no_message(observed: Observed) -> None:
    observed.options({"messageTokens": 1000, "bufferTokens": 300})
    observed.script.failures = 1
    thread = observed.world.thread()
    observed.turns(thread, 1, 2)  # 400 tokens: the run fails, its execution says so
    runs = observed.world.get(f"/v1/threads/{thread}/learning").json()["executions"]
    assert [r["status"] for r in runs if r["kind"] == "thread-observe"] == ["failed"]
    assert observed.log(thread)["log"] == ""
    observed.turns(thread, 3)  # still past the interval: the next run reads all six
    assert (
        "chunk 2: question1 answer1 question2 answer2 question3 answer3"
        in (observed.log(thread)["log"])
    )


@pytest.mark.parametrize(("share", "raw"), [(0.8, 4), (0.5, 8)])
def test_past_message_tokens_buffered_observations_replace_raw_history(
    observed: Observed, share: float, raw: int
) -> None:
    observed.options({"messageTokens": 1000, "bufferTokens": 400, "bufferActivation": share})
    thread = observed.world.thread()
    observed.turns(thread, 1, 2, 3, 4, 5, 6)  # 1,200 tokens, chunks at 400, 800, 1,200
    assert len(observed.script.calls) == 3
    context = observed.context(thread)
    # 0.8 of 1,200 = 960: chunks 1-2 (800 tokens) replace history; 0.5: chunk 1 (400).
    assert len(context["messages"]) == raw
    assert firsts(context)[-1] == "answer6"
    assert "chunk 1:" in context["observations"]
    assert ("chunk 2:" in context["observations"]) == (share == 0.8)
    assert "chunk 3:" not in context["observations"]
    assert "<observations>" in context["system"]
    # The log shows every observation made, active or buffered.
    assert "chunk 3:" in observed.log(thread)["log"]
    # Activated once: the next context answers the same.
    assert observed.context(thread)["messages"] == context["messages"]


def test_block_after_observes_synchronously_in_the_context(observed: Observed) -> None:
    # The background never runs (5,000 tokens); 1.5 x 1,000 is the safety valve.
    observed.options({"messageTokens": 1000, "bufferTokens": 5000, "blockAfter": 1.5})
    thread = observed.world.thread()
    observed.turns(thread, *range(1, 9))  # 1,600 tokens
    assert observed.script.calls == []
    context = observed.context(thread)
    assert observed.script.tasks() == ["observation"]
    # The share keeps the newest 20 % of messageTokens (200 tokens: two messages) raw.
    assert firsts(context) == ["question8", "answer8"]
    assert "question1" in context["observations"]
    assert "question7" in context["observations"]


def test_block_after_past_its_deadline_answers_raw_history(observed: Observed) -> None:
    observed.options({"messageTokens": 1000, "bufferTokens": 5000, "blockAfter": 1.5})
    observed.services.threads.observer.block_deadline_s = 0.2
    observed.script.delay_s = 1.0
    thread = observed.world.thread()
    observed.turns(thread, *range(1, 9))
    started = time.monotonic()
    context = observed.context(thread)
    assert time.monotonic() - started < 0.9
    assert context["observations"] is None
    assert len(context["messages"]) == 16
    time.sleep(1.0)  # the late answer arrives and is dropped
    assert observed.log(thread)["log"] == ""


def test_buffer_on_idle_observes_at_the_end_of_every_turn(observed: Observed) -> None:
    observed.options({"messageTokens": 1000, "bufferTokens": 5000, "bufferOnIdle": True})
    thread = observed.world.thread()
    assert observed.world.save(thread, turn(1)[0]).status_code == 200
    assert observed.script.calls == []  # no answer yet: the turn has not ended
    assert observed.world.save(thread, turn(1)[1]).status_code == 200
    observed.turns(thread, 2)
    assert observed.script.tasks() == ["observation", "observation"]
    assert "chunk 2: question2 answer2" in observed.log(thread)["log"]


@pytest.mark.parametrize(
    ("top", "own", "activated"),
    [("5m", None, True), ("5m", False, False), (False, 300_000, True), (False, None, False)],
)
def test_idle_activation_before_the_threshold(
    observed: Observed, top: Any, own: Any, activated: bool
) -> None:
    observation: dict[str, Any] = {"messageTokens": 1000, "bufferTokens": 400}
    if own is not None:
        observation["activateAfterIdle"] = own
    observed.options(observation, activateAfterIdle=top)
    thread = observed.world.thread()
    observed.turns(thread, 1, 2, 3)  # 600 tokens: one buffered chunk, under the threshold
    assert observed.context(thread)["observations"] is None  # not idle yet
    observed.clock.ms += 5 * 60_000
    context = observed.context(thread)
    assert (context["observations"] is not None) == activated
    assert firsts(context) == (["question3", "answer3"] if activated else firsts(context))
    if not activated:
        assert len(context["messages"]) == 6


def test_the_observer_manages_the_working_memory(observed: Observed) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "additionalProperties": False,
    }
    observed.world.activate(
        {
            "workingMemory": {"schema": schema, "scope": "resource"},
            "observationalMemory": {
                "model": OBSERVER,
                "observation": {
                    "messageTokens": 1000,
                    "bufferOnIdle": True,
                    "manageWorkingMemory": True,
                },
            },
        }
    )
    thread = observed.world.thread()
    put = observed.world.api.client.put(
        f"/v1/threads/{thread}/working-memory",
        json={"content": {"name": "Ana"}},
        headers=observed.world.owner.headers,
    )
    assert put.status_code == 409
    assert put.json()["error"]["_tag"] == "ThreadConflict"
    observed.script.working_memory = {"name": "Ana"}
    observed.turns(thread, 1)
    memory = observed.world.get(f"/v1/threads/{thread}/working-memory").json()
    assert memory["content"] == {"name": "Ana"}
    # An answer that breaks the schema is refused (the notes stay) and the run says why.
    observed.script.working_memory = {"name": "Ana", "age": 40}
    observed.turns(thread, 2)
    assert observed.world.get(f"/v1/threads/{thread}/working-memory").json()["content"] == {
        "name": "Ana"
    }
    runs = observed.world.get(f"/v1/threads/{thread}/learning").json()["executions"]
    assert any(r["rejected"] for r in runs)
    # The agent gets the notes read-only: no update tool.
    assert observed.context(thread)["tools"] == []


def test_thread_title_replaces_the_first_title_and_is_shown_its_own(observed: Observed) -> None:
    observed.options({"messageTokens": 1000, "bufferOnIdle": True, "threadTitle": True})
    thread = observed.world.thread()
    observed.script.title = "Trip planning"
    observed.turns(thread, 1)
    title = observed.world.get(f"/v1/threads/{thread}").json()["thread"]["title"]
    assert title == "Trip planning"
    # generateTitle's first title was not shown to the observer as its own.
    first = observed.script.calls[0]
    assert "Current title: (none)" in first.user
    observed.script.title = None
    observed.turns(thread, 2)
    assert "Current title: Trip planning" in observed.script.calls[1].user
    assert observed.world.get(f"/v1/threads/{thread}").json()["thread"]["title"] == title


def test_the_reflector_condenses_the_log_past_its_threshold(observed: Observed) -> None:
    observed.script.padding = 300  # each observation is about 300 tokens
    observed.options(
        {"messageTokens": 1000, "bufferTokens": 200},
        reflection={"model": REFLECTOR, "observationTokens": 1000},
    )
    thread = observed.world.thread()
    observed.turns(thread, *range(1, 8))  # 1,400 tokens: seven buffered observations
    assert "reflection" not in observed.script.tasks()
    calls = len(observed.script.calls)
    context = observed.context(thread)  # five replace history: a log of about 1,500
    assert context["observations"].count("- chunk") == 5
    # The activation took the log past 0.5 of 1,000: the reflector ran in the background
    # at once, with no later save, and its reflection waits in reserve.
    assert observed.script.tasks()[calls:] == ["reflection"]
    reflection = observed.script.calls[-1]
    assert reflection.user.count("- chunk") == 5
    assert observed.log(thread)["reflections"] == 0
    runs = observed.world.get(f"/v1/threads/{thread}/learning").json()["executions"]
    reflected = [r for r in runs if [a["op"] for a in r["applied"]] == ["reflect"]]
    assert [r["status"] for r in reflected] == ["succeeded"]
    # Another context changes nothing and starts no second reflection.
    observed.context(thread)
    assert observed.script.tasks()[calls:] == ["reflection"]
    # The log is past 1,000: the reflection replaces the five observations it condensed.
    context = observed.context(thread)
    assert context["observations"].startswith("- reflection")
    assert "- chunk" not in context["observations"]
    log = observed.log(thread)
    assert log["reflections"] == 1
    assert log["log"].startswith("- reflection")
    assert "chunk 6:" in log["log"]  # observations made after it stay, buffered


def test_reflection_idle_activation_is_its_own(observed: Observed) -> None:
    observed.script.padding = 100  # five active observations: about 550 tokens
    observed.options(
        {"messageTokens": 1000, "bufferTokens": 200},
        reflection={"model": REFLECTOR, "observationTokens": 1000, "activateAfterIdle": "1m"},
    )
    thread = observed.world.thread()
    observed.turns(thread, *range(1, 8))
    observed.context(thread)  # past 0.5 of 1,000: a reflection in reserve at once
    assert observed.script.tasks()[-1] == "reflection"
    # Under observationTokens and not idle: the observations stay.
    assert "- chunk" in observed.context(thread)["observations"]
    observed.clock.ms += 60_000
    assert observed.context(thread)["observations"].startswith("- reflection")


def test_past_reflection_block_after_the_reflector_runs_in_the_context(
    observed: Observed,
) -> None:
    observed.script.padding = 450
    observed.options(
        {"messageTokens": 1000, "bufferTokens": 200},
        reflection={"model": REFLECTOR, "observationTokens": 1000, "blockAfter": 1.9},
    )
    thread = observed.world.thread()
    observed.turns(thread, *range(1, 8))
    assert "reflection" not in observed.script.tasks()
    calls = len(observed.script.calls)
    # Five observations of 450 tokens activate at once: 2,250 tokens, past 1.9 x 1,000.
    context = observed.context(thread)
    # One reflection, in the request: the condensed log wants no background one.
    assert observed.script.tasks()[calls:] == ["reflection"]
    assert context["observations"].startswith("- reflection")
    assert observed.log(thread)["reflections"] == 1


def test_recall_searches_the_users_messages(observed: Observed) -> None:
    observed.options({"messageTokens": 1000}, retrieval=True)
    thread = observed.world.thread()
    observed.world.save(
        thread,
        {"role": "user", "content": "My order number is 4471 and it ships Tuesday."},
        {"role": "assistant", "content": "Noted."},
    )
    other = observed.world.thread(observed.world.member)
    observed.world.save(
        other, {"role": "user", "content": "order 4471"}, user=observed.world.member
    )
    client, headers = observed.world.api.client, observed.world.owner.headers
    found = client.post(
        f"/v1/threads/{thread}/recall", json={"query": "order 4471"}, headers=headers
    )
    assert found.status_code == 200, found.text
    messages = found.json()["messages"]
    assert [m["content"] for m in messages] == ["My order number is 4471 and it ships Tuesday."]
    assert messages[0]["threadId"] == thread
    tools = [t["name"] for t in observed.context(thread)["tools"]]
    assert tools == ["recall"]
    # Resource scope: the user's other threads with the agent too; thread scope: this one.
    second = observed.world.thread()
    observed.world.save(second, {"role": "user", "content": "Where is order 4471 now?"})
    url = f"/v1/threads/{second}/recall"
    found = client.post(url, json={"query": "order 4471"}, headers=headers).json()["messages"]
    assert {m["threadId"] for m in found} == {thread, second}
    observed.options({"messageTokens": 1000}, retrieval={"scope": "thread"})
    found = client.post(url, json={"query": "order 4471"}, headers=headers).json()["messages"]
    assert [m["content"] for m in found] == ["Where is order 4471 now?"]
    bad = client.post(f"/v1/threads/{thread}/recall", json={"limit": 3}, headers=headers)
    assert bad.status_code == 400
    assert bad.json()["error"]["path"] == ["query"]


def test_recall_with_vector_fuses_semantic_recalls_nearest(
    observed: Observed, stack: Stack
) -> None:
    observed.options({"messageTokens": 1000}, retrieval=True)
    thread = observed.world.thread()
    saved = observed.world.save(
        thread,
        {"role": "user", "content": "My order number is 4471."},
        {"role": "assistant", "content": "Noted, it ships Tuesday."},
    ).json()["messageIds"]
    views = {
        m["id"]: m for m in observed.world.get(f"/v1/threads/{thread}/messages").json()["messages"]
    }
    asked: list[Any] = []

    def stored(view: dict[str, Any]) -> Message:
        return Message(view["id"], view["role"], view["content"], view["createdAt"])

    class Nearest:
        """Semantic recall's index: the answer first, then the order (by meaning)."""

        def recall(self, t: Any, seq: int, options: Any, message: Any, recent: Any) -> Any:
            asked.append((options["semanticRecall"], message, seq))
            return [
                RecalledWindow(t.id, (stored(views[saved[1]]),), 0.9),
                RecalledWindow(t.id, (stored(views[saved[0]]),), 0.5),
            ]

    # Saved before semantic recall is on: nothing to embed in this test.
    observed.world.activate(
        {
            "semanticRecall": True,
            "observationalMemory": {
                "model": OBSERVER,
                "observation": {"messageTokens": 1000},
                "retrieval": {"vector": True, "scope": "thread"},
            },
        }
    )
    threads = stack.services.threads
    previous, threads.semantic = threads.semantic, Nearest()
    try:
        found = observed.world.api.client.post(
            f"/v1/threads/{thread}/recall",
            json={"query": "order 4471", "limit": 5},
            headers=observed.world.owner.headers,
        )
    finally:
        threads.semantic = previous
    assert found.status_code == 200, found.text
    # In both lists first; the answer found by meaning alone second.
    assert [m["id"] for m in found.json()["messages"]] == saved
    (recall, query, seq) = asked[0]
    assert recall["messageRange"] == {"before": 0, "after": 0}
    assert recall["scope"] == "thread"
    assert recall["topK"] == 5
    assert (query, seq) == ("order 4471", 2)


def test_recall_is_409_when_retrieval_is_off(observed: Observed) -> None:
    observed.options({"messageTokens": 1000})
    thread = observed.world.thread()
    answer = observed.world.api.client.post(
        f"/v1/threads/{thread}/recall", json={"query": "x"}, headers=observed.world.owner.headers
    )
    assert answer.status_code == 409


def test_another_users_log_and_recall_are_not_found(observed: Observed) -> None:
    observed.options({"messageTokens": 1000, "bufferOnIdle": True}, retrieval=True)
    thread = observed.world.thread()
    observed.turns(thread, 1)
    member = observed.world.member
    assert observed.world.get(f"/v1/threads/{thread}/observations", member).status_code == 404
    recall = observed.world.api.client.post(
        f"/v1/threads/{thread}/recall", json={"query": "question1"}, headers=member.headers
    )
    assert recall.status_code == 404


def test_observations_are_sealed_at_rest(observed: Observed, stack: Stack) -> None:
    observed.options({"messageTokens": 1000, "bufferOnIdle": True})
    thread = observed.world.thread()
    observed.turns(thread, 1)
    assert "chunk 1" in observed.log(thread)["log"]
    rows = stack.adapters.store.query(f"THREAD#{thread}", _prefix("OBS"), limit=100).records
    assert rows
    assert all("chunk" not in repr(row) for row in rows)


def _prefix(prefix: str) -> Any:
    from agent_memory.ports import KeyRange

    return KeyRange(prefix=prefix)
