"""After a bot memory scenario (items, learned facts, an observation, Remember, share,
Forget, context, purge), the table holds none of their words in plaintext."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, User
from tests.support.bots import (
    MEMORY_MODEL,
    Script,
    make_bot,
    make_channel,
    make_chat,
    script,
    services,
    turn,
)
from tests.support.plaintext import all_text, scan_rows

__all__ = ["script", "services"]  # the memory Bot's scripted model, learning inline

MARKERS = {
    "input": "Zephyr-6120",
    "assistant": "Mariner-3391",
    "tool": "Basalt-7702",
    "fact": "Quokka-5817",
    "observation": "Tundra-2264",
    "remember": "Juniper-4408",
    "group": "Saffron-9153",
}


def taught(
    api: Api,
    script: Script,
    user: User,
    chat: dict[str, Any],
    turn_id: str,
    change: dict[str, Any],
    owner: User | None = None,
) -> list[str]:
    """`change` learned by the run a confide of `user` in the Turn starts once it completes:
    the ids of the entries it wrote, as the Bot's `owner` reads its runs."""
    script.answers["learning_changes"] = {"changes": [{"topics": [], **change}]}
    path = f"/v1/chats/{chat['id']}/turns/{turn_id}"
    confided = api.client.post(f"{path}/confide", json={"text": "x"}, headers=user.headers)
    assert confided.status_code == 200, confided.text
    assert api.client.post(f"{path}/complete", json={}, headers=user.headers).status_code == 200
    url = f"/v1/bots/{chat['botId']}/learning"
    [run, *_] = api.client.get(url, headers=(owner or user).headers).json()["executions"]
    assert run["status"] == "succeeded", run
    return [a["key"] for a in run["applied"]]


def test_no_bot_memory_content_at_rest(api: Api, script: Script, local_aws: Any) -> None:
    org = api.org()
    settings = {"botMemoryModel": MEMORY_MODEL}
    patched = api.client.patch(
        f"/v1/organizations/{org}/settings", json=settings, headers=api.admin
    )
    assert patched.status_code == 200, patched.text
    ana, ben = api.user(org), api.user(org)
    client = api.client
    bot = make_bot(api, ana, {ben.id: "read"})
    chat = make_chat(api, ana, bot["id"])
    started = turn(api, ana, chat["id"], f"My locker code word is {MARKERS['input']}.")
    turn_id = started["turn"]["id"]
    added = client.post(
        f"/v1/chats/{chat['id']}/turns/{turn_id}/items",
        json={
            "items": [
                {"role": "assistant", "content": f"Noted {MARKERS['assistant']}."},
                {"role": "tool", "content": f"lookup {MARKERS['tool']}", "app": "lockers"},
            ]
        },
        headers=ana.headers,
    )
    assert added.status_code == 200, added.text
    fact = {"op": "fact", "content": f"Ana's word is {MARKERS['fact']}.", "sources": ["i-01"]}
    [fact_id] = taught(api, script, ana, chat, turn_id, fact)
    observation = {
        "op": "observation",
        "content": f"Ana guards {MARKERS['observation']}.",
        "confidence": 0.6,
        "sources": [fact_id],
    }
    noted = turn(api, ana, chat["id"], "Noted.")["turn"]["id"]
    taught(api, script, ana, chat, noted, observation)
    channel = make_channel(api, ana, ben)
    group = make_chat(api, ana, bot["id"], channelId=channel["id"])
    said = turn(api, ben, group["id"], f"The team word is {MARKERS['group']}.")["turn"]["id"]
    team = {"op": "fact", "content": f"Team word {MARKERS['group']}.", "sources": ["i-01"]}
    taught(api, script, ben, group, said, team, owner=ana)
    url = f"/v1/bots/{bot['id']}/memory"
    remembered = client.post(
        url,
        json={"command": {"_tag": "Remember", "content": f"Pin {MARKERS['remember']}."}},
        headers=ana.headers,
    )
    assert remembered.status_code == 200, remembered.text
    memory = client.get(url, headers=ana.headers).json()
    assert any(MARKERS["observation"] in e["content"] for e in memory["entries"])
    context = client.post(f"{url}/context", json={"chatId": chat["id"]}, headers=ana.headers)
    assert MARKERS["fact"] in context.json()["text"]
    forgot = client.post(
        url, json={"command": {"_tag": "Forget", "id": fact_id}}, headers=ana.headers
    )
    assert forgot.status_code == 200, forgot.text
    purged = client.post(f"{url}/purge", json={"tag": f"chat:{group['id']}"}, headers=ana.headers)
    assert purged.json() == {"removed": 1}

    items = scan_rows(local_aws)
    dump = all_text(items)
    assert len(items) > 20
    for where, marker in MARKERS.items():
        assert marker not in dump, f"{where} is stored in plaintext"
    # Change logs are sealed at rest (seed 002): what made a change and its ids included.
    logs = [i for i in items if i.get("type", {}).get("S") == "bot-memory-log"]
    assert logs, "the scenario wrote log rows"
    assert all("ids" not in row and "by" not in row and "sealed" in row for row in logs)
    assert fact_id not in repr(logs)
