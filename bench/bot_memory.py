"""Bot memory (seed 002) on the embedded AWS, through the HTTP app:

- `aws_calls`: DynamoDB, KMS and decrypts for `bot_memory.read` (GET memory),
  `bot_memory.context`, `bot_memory.remember`, `bot_memory.forget`, `bot_memory.purge`
  (a chat's two facts), cold (fresh services: new clients, an empty data-key cache) and
  warm (the next call). Every request includes the token lookup and its rate-limit write.
- `scaling.bot_context`: the context of a private chat at 100, 1,000 and 10,000 entries of
  the caller's pool: DynamoDB requests, items read, decrypts, entries rendered. Targets:
  decrypts at most rendered + 1, items read far below the pool's size.

    python -m bench.bot_memory      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from bench.rigs import Env, at_sizes, batch_put, bot_fact, cold_warm, embedded

SIZES = (100, 1_000, 10_000)
Request = tuple[str, str, Any]


def _facts(setup: Any, chat_id: str, user: Any, count: int) -> list[str]:
    from agent_memory.domain.tasks.learning_changes import FactChange
    from tests.support.bot_memory import MemoryBot, said

    item = said(setup.bot_memory, user, chat_id, "I prefer short answers and tea.")
    changes = [
        FactChange(op="fact", content=f"Fact {n}: prefers tea.", topics=[], sources=[item])
        for n in range(count)
    ]
    bot = MemoryBot(setup.bot_memory)
    return bot.ids(bot.learn(chat_id, *changes))


def _seed(
    setup: Any, env: Env, bot_id: str, org: str, user: str, chat_id: str, start: int, count: int
) -> None:
    """Facts for `user`, sealed as the service seals them, written with BatchWriteItem."""
    from agent_memory.adapters.dynamodb.items import serialize
    from agent_memory.persistence.bot_memory import bot_pool

    repo = setup.bot_memory.repo
    pool = bot_pool(bot_id, org)
    rng = random.Random(start)
    items: list[dict[str, Any]] = []
    for n in range(start, start + count):
        content = f"Fact {n}: " + "detail " * rng.randrange(2, 30)
        meta = bot_fact(f"mem_seed{n:06d}", user, org, ("i-01", chat_id), content, n)
        for action in repo.pools.put(pool, meta, content):
            items.append({"PutRequest": {"Item": serialize(action.record)}})
    batch_put(env.root.client("dynamodb"), env.settings.table_name, items)


def _aws_calls(env: Env, setup: Any, ana: Any, token: str) -> dict[str, Any]:
    """Each bot memory route, cold and warm, on a Bot whose pool holds 20 facts."""
    bot_id = setup.bots.create_bot(ana, "Bench", {}).id
    chat_id = setup.bots.create_chat(ana, bot_id, None, "chat").id
    _facts(setup, chat_id, ana, 20)
    memory = f"/v1/bots/{bot_id}/memory"

    def remember() -> Request:
        return ("POST", memory, {"command": {"_tag": "Remember", "content": "Short answers."}})

    def forget() -> Request:
        made = setup.bot_memory.remember(ana, bot_id, "To forget.", []).entry
        assert made is not None
        return ("POST", memory, {"command": {"_tag": "Forget", "id": made.meta.id}})

    def purge() -> Request:
        chat = setup.bots.create_chat(ana, bot_id, None, "chat").id
        _facts(setup, chat, ana, 2)
        return ("POST", f"{memory}/purge", {"tag": f"chat:{chat}"})

    operations: dict[str, Callable[[], Request]] = {
        "bot_memory.read": lambda: ("GET", memory, None),
        "bot_memory.context": lambda: ("POST", f"{memory}/context", {"chatId": chat_id}),
        "bot_memory.remember": remember,
        "bot_memory.forget": forget,
        "bot_memory.purge": purge,
    }
    return {name: cold_warm(env, token, prepare) for name, prepare in operations.items()}


def _context_at_scale(env: Env, setup: Any, ana: Any, token: str) -> list[dict[str, Any]]:
    """The chat context of a new Bot whose pool grows to each of SIZES."""
    bot = setup.bots.create_bot(ana, "Scale", {}).id
    chat = setup.bots.create_chat(ana, bot, None, "chat").id

    def grow(have: int, want: int) -> None:
        _seed(setup, env, bot, "bench", "ana", chat, have, want - have)

    return at_sizes(
        env,
        token,
        f"/v1/bots/{bot}/memory/context",
        {"chatId": chat},
        SIZES,
        grow,
        "entries",
        lambda answer: {"rendered": len(answer.json()["ids"])},
    )


def run() -> dict[str, Any]:
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal

    with embedded() as env:
        setup = env.services(learning=False)
        setup.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        created = setup.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        token = created.token.secret
        ana = Principal("ana", "bench", "member")
        aws_calls = _aws_calls(env, setup, ana, token)
        scaling = _context_at_scale(env, setup, ana, token)
    targets = {
        "context_decrypts_at_most_rendered_plus_1": all(
            r["decrypts"] <= r["rendered"] + 1 for r in scaling
        ),
        "context_items_read_below_a_tenth_of_the_pool_at_10000": scaling[-1]["items_read"]
        < SIZES[-1] // 10,
    }
    return {
        "aws_calls": aws_calls,
        "scaling": {"bot_context": scaling},
        "targets": targets,
        "note": "through HTTP (token lookup and rate-limit write included)",
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
