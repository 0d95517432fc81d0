"""After a bot memory scenario (items, learned facts, an observation, Remember, share,
Forget, context, purge), the table holds none of their words in plaintext."""

from __future__ import annotations

from typing import Any

from agent_memory.domain.tasks.learning_changes import FactChange, ObservationChange
from tests.conftest import Api
from tests.support.bots import make_bot, make_channel, make_chat, turn
from tests.support.plaintext import all_text, scan_rows

MARKERS = {
    "input": "Zephyr-6120",
    "assistant": "Mariner-3391",
    "tool": "Basalt-7702",
    "fact": "Quokka-5817",
    "observation": "Tundra-2264",
    "remember": "Juniper-4408",
    "group": "Saffron-9153",
}


def test_no_bot_memory_content_at_rest(api: Api, services: Any, local_aws: Any) -> None:
    org = api.org()
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
    learned = services.bot_memory.learn(
        bot["id"],
        org,
        chat["id"],
        [
            FactChange(
                op="fact", content=f"Ana's word is {MARKERS['fact']}.", topics=[], sources=["i-01"]
            )
        ],
        evidence=["i-01"],
    )
    fact_id = learned.applied[0].entry_id
    services.bot_memory.learn(
        bot["id"],
        org,
        chat["id"],
        [
            ObservationChange(
                op="observation",
                content=f"Ana guards {MARKERS['observation']}.",
                confidence=0.6,
                topics=[],
                sources=[fact_id],
            )
        ],
        evidence=[],
    )
    channel = make_channel(api, ana, ben)
    group = make_chat(api, ana, bot["id"], channelId=channel["id"])
    turn(api, ben, group["id"], f"The team word is {MARKERS['group']}.")
    services.bot_memory.learn(
        bot["id"],
        org,
        group["id"],
        [
            FactChange(
                op="fact", content=f"Team word {MARKERS['group']}.", topics=[], sources=["i-01"]
            )
        ],
        evidence=["i-01"],
    )
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
