"""`local/rules` through HTTP on the embedded AWS, with the real learning workflow (the ASL in
moto's executor): what a person plainly says about themselves is learned, and none of the
secret phrasings of the corpus (tests/support/secret_corpus.py) is kept, in session memory
and in bot memory with `local/rules` as the organization's botMemoryModel.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.conftest import Api, User
from tests.support.secret_corpus import SECRETS

RULES = "local/rules"
ABOUT_ANA = ["I am allergic to peanuts.", "I live in Berlin.", "Call me Annie."]
LEARNED = {
    "allergy": "is allergic to peanuts.",
    "home-city": "lives in Berlin.",
    "preferred-name": "wants to be called Annie.",
}
# Each secret as the attacker typed it, "Remember that ...", and as it is.
SAID = [f"Remember that {text}" for text, _kind in SECRETS] + [text for text, _kind in SECRETS]
ENDED = {"succeeded", "failed", "skipped"}


def _until(read: Callable[[], list[dict[str, Any]]], count: int) -> list[dict[str, Any]]:
    """The executions once `count` of them have ended (the workflow runs in moto's threads)."""
    deadline = time.monotonic() + 60
    executions = read()
    while time.monotonic() < deadline:
        executions = read()
        if len([e for e in executions if e["status"] in ENDED]) >= count:
            return executions
        time.sleep(0.05)
    raise AssertionError(f"learning did not end: {executions}")


class Person:
    def __init__(self, api: Api, user: User) -> None:
        self.api, self.user = api, user

    def post(self, path: str, body: Any) -> Any:
        answer = self.api.client.post(path, json=body, headers=self.user.headers)
        assert answer.status_code in (200, 201), answer.text
        return answer.json()

    def get(self, path: str) -> Any:
        answer = self.api.client.get(path, headers=self.user.headers)
        assert answer.status_code == 200, answer.text
        return answer.json()


def _session(api: Api) -> tuple[Person, str]:
    ana = Person(api, api.user(api.org(), user_id="ana"))
    agent = ana.post("/v1/agents", {"name": "Helper"})["agent"]["id"]
    session = ana.post("/v1/sessions", {"agentId": agent, "model": RULES})["session"]
    return ana, session["id"]


def _say(ana: Person, session: str, texts: list[str], turns_so_far: int) -> None:
    items = [{"role": "user", "content": text} for text in texts]
    turned = ana.post(f"/v1/sessions/{session}/turns", {"items": items})
    assert turned["turn"]["learning"] == "started"
    executions = _until(
        lambda: ana.get(f"/v1/sessions/{session}/learning")["executions"], turns_so_far + 1
    )
    assert executions[0]["status"] == "succeeded", executions[0]


def test_session_learning_keeps_what_a_person_says_about_themselves(api: Api) -> None:
    ana, session = _session(api)
    _say(ana, session, ABOUT_ANA, 0)

    entries = ana.get(f"/v1/sessions/{session}/memory")["entries"]
    assert {key: entry["content"] for key, entry in entries.items()} == {
        key: f"The user {said}" for key, said in LEARNED.items()
    }
    assert all(entry["kind"] == "fact" for entry in entries.values())
    [run] = ana.get(f"/v1/sessions/{session}/learning")["executions"]
    assert sorted(change["key"] for change in run["applied"]) == sorted(LEARNED)


def test_session_learning_keeps_no_secret_of_the_corpus(api: Api) -> None:
    ana, session = _session(api)
    chunks = [SAID[start : start + 60] for start in range(0, len(SAID), 60)]
    for turns, chunk in enumerate(chunks):
        _say(ana, session, chunk, turns)
    # The same run that refuses the secrets still learns: the memory is not empty by accident.
    _say(ana, session, ["I live in Berlin."], len(chunks))

    memory = ana.get(f"/v1/sessions/{session}/memory")
    assert len(memory["processed"]) == len(SAID) + 1
    assert {key: entry["content"] for key, entry in memory["entries"].items()} == {
        "home-city": "The user lives in Berlin."
    }


def _bot_chat(api: Api) -> tuple[Person, str, str]:
    org = api.org()
    answer = api.client.patch(
        f"/v1/organizations/{org}/settings", json={"botMemoryModel": RULES}, headers=api.admin
    )
    assert answer.status_code == 200, answer.text
    ana = Person(api, api.user(org))
    bot = ana.post("/v1/bots", {"name": "Helper"})["bot"]["id"]
    chat = ana.post("/v1/chats", {"botId": bot})["chat"]["id"]
    return ana, bot, chat


def _bot_turn(ana: Person, chat: str, text: str, *, confide: bool = False) -> None:
    turn = ana.post(f"/v1/chats/{chat}/turns", {"input": text})["turn"]["id"]
    if confide:
        ana.post(f"/v1/chats/{chat}/turns/{turn}/confide", {"text": "Noting what they told me."})
    ana.post(f"/v1/chats/{chat}/turns/{turn}/complete", {})


def test_bot_memory_learning_with_local_rules_keeps_a_plain_statement_as_a_fact(
    api: Api,
) -> None:
    ana, bot, chat = _bot_chat(api)
    _bot_turn(ana, chat, " ".join(ABOUT_ANA), confide=True)

    [run] = _until(lambda: ana.get(f"/v1/bots/{bot}/learning")["executions"], 1)
    assert run["status"] == "succeeded", run
    entries = ana.get(f"/v1/bots/{bot}/memory")["entries"]
    assert sorted(entry["content"].split(" ", 1)[1] for entry in entries) == sorted(
        LEARNED.values()
    )
    assert {entry["layer"] for entry in entries} == {"fact"}


def test_bot_memory_learning_with_local_rules_keeps_no_secret_of_the_corpus(api: Api) -> None:
    ana, bot, chat = _bot_chat(api)
    # Five secrets a Turn, each on a line of its own (read as a sentence of its own); the
    # confided Turn's learning reads every Turn before it.
    said = [f"Remember that {text}" for text, _kind in SECRETS]
    turns = ["\n".join(said[start : start + 5]) for start in range(0, len(said), 5)]
    for text in turns:
        _bot_turn(ana, chat, text)
    _bot_turn(ana, chat, "I live in Berlin.", confide=True)

    [run] = _until(lambda: ana.get(f"/v1/bots/{bot}/learning")["executions"], 1)
    assert run["status"] == "succeeded", run
    entries = ana.get(f"/v1/bots/{bot}/memory")["entries"]
    assert [entry["content"].split(" ", 1)[1] for entry in entries] == ["lives in Berlin."]
    read = ana.get(f"/v1/chats/{chat}/items")["items"]
    assert len(read) == len(turns) + 1
