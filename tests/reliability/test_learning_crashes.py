"""Concurrent learning does not apply the same evidence twice, after a `kill -9` too (seed
002, "How the Bot learns"): the local server (`make run`, SQLite and the local workflow
runner, a real subprocess) kills itself with SIGKILL at every step boundary of a learning
run (infra/local/crash.py: as LoadEvidence, CallModel and ApplyLearning begin, and after
each returned, before the runner saved it: for ApplyLearning, between the memory change and
the run's end), while writers keep completing confided turns in their chats; it is started
again on the same data each time, so resumed runs race each other and new ones.

At the end, with every turn completed and one more confided turn per chat: no item is the
source of two facts, and every person's item is the source of one (nothing is lost).
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.killable_server import ADMIN_TOKEN, Host

BOUNDARIES = (
    "LoadEvidence",
    "LoadEvidence.done",
    "CallModel",
    "CallModel.done",
    "ApplyLearning",
    "ApplyLearning.done",
)
# Each boundary the first time a life reaches it; the apply's again, later in a life (each
# start costs seconds: the whole test stays near a minute).
KILLS = [f"{point}:1" for point in BOUNDARIES] + ["ApplyLearning:2", "ApplyLearning.done:2"]
WRITERS = 2
LIFE_S = 60.0
TERMINAL = {"succeeded", "failed", "skipped"}


class Writer(threading.Thread):
    """One person's chat: turns saying one new thing each, two at a time, confided and
    completed, each request repeated while the server is down (a request cut by a kill may
    have committed: a turn it started is completed at the end)."""

    def __init__(self, host: Host, token: str, chat: str, tag: str, stop: threading.Event):
        super().__init__(daemon=True)
        self.host, self.token, self.chat, self.tag, self.stop = host, token, chat, tag, stop
        self.turns = 0
        self.unexpected: list[str] = []

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.turn(stop=self.stop)
        except Exception as error:  # seen by the test, not lost in a thread
            self.unexpected.append(repr(error))

    def turn(self, stop: threading.Event | None = None) -> None:
        """Two turns side by side, each saying one new thing and confided, completed one
        after the other: their runs read from the same position, the second's evidence
        holding the first's item too."""
        base = f"/v1/chats/{self.chat}/turns"
        turns = []
        for _side in range(2):
            text = f"My plant {self.tag}x{self.turns} is green."
            self.turns += 1
            started = self.host.until_answered(self.token, "POST", base, {"input": text}, stop)
            if started is None:
                return  # left open: completed once the writers stop
            self.expect(started, 201)
            turns.append(started.json()["turn"]["id"])
        steps = [(t, "confide", {"text": "I am not sure."}) for t in turns]
        steps += [(t, "complete", {}) for t in turns]
        for turn, step, body in steps:
            path = f"{base}/{turn}/{step}"
            answer = self.host.until_answered(self.token, "POST", path, body, stop)
            if answer is None:
                return
            self.expect(answer, 200)

    def expect(self, answer: Any, status: int) -> None:
        if answer.status_code != status:
            self.unexpected.append(f"{answer.request.url}: {answer.status_code} {answer.text}")

    def complete_every_turn(self) -> None:
        """Complete every turn of the chat (a start cut by a kill left one the writer never
        heard of): a client finishing what it began."""
        items = self.host.call(self.token, "GET", f"/v1/chats/{self.chat}/items")["items"]
        for turn in dict.fromkeys(item["turnId"] for item in items):
            path = f"/v1/chats/{self.chat}/turns/{turn}/complete"
            self.expect(self.host.until_answered(self.token, "POST", path, {}), 200)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    found = Host(
        tmp_path,
        env={
            "MEMORY_LEARNING_WORKERS": "8",
            "RATE_LIMIT_PER_MINUTE": "0",
            "ORG_MODEL_CALLS_PER_MINUTE": "0",
            "DEFAULT_MODEL": "local/rules",
            "LOG_LEVEL": "WARNING",
        },
    )
    yield found
    found.close()


def _settled(host: Host, token: str, bot: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while True:
        runs: list[dict[str, Any]] = host.call(token, "GET", f"/v1/bots/{bot}/learning")[
            "executions"
        ]
        if all(run["status"] in TERMINAL for run in runs):
            return runs
        assert time.monotonic() < deadline, [r for r in runs if r["status"] not in TERMINAL]
        time.sleep(0.2)


def test_killed_at_every_step_boundary_learning_applies_each_item_once(host: Host) -> None:
    host.start(MEMORY_KILL_AT=KILLS[0])
    org = host.call(ADMIN_TOKEN, "POST", "/v1/admin/organizations", {"name": "Crashes"}, 201)
    settings = {"botMemoryModel": "local/rules"}
    host.call(ADMIN_TOKEN, "PATCH", f"/v1/organizations/{org['id']}/settings", settings)
    ana = host.call(ADMIN_TOKEN, "POST", "/v1/admin/users", {"organizationId": org["id"]}, 201)
    token = ana["token"]
    bot = host.call(token, "POST", "/v1/bots", {"name": "Crashy"}, 201)["bot"]["id"]
    stop = threading.Event()
    writers = []
    for n in range(WRITERS):
        chat = host.call(token, "POST", "/v1/chats", {"botId": bot}, 201)["chat"]["id"]
        writers.append(Writer(host, token, chat, f"w{n}", stop))
    for writer in writers:
        writer.start()
    resumed = 0
    try:
        for number, kill in enumerate(KILLS):
            life = host.lives[-1]
            assert life.ended(LIFE_S) == -9, f"{kill} was never reached:\n{life.output()}"
            point, count = kill.split(":")
            assert f"killed at {point} ({count})" in life.output()
            nxt = {"MEMORY_KILL_AT": KILLS[number + 1]} if number + 1 < len(KILLS) else {}
            started = host.start(**nxt)
            found = re.search(r"(\d+) unfinished execution\(s\) resumed", started.output())
            resumed += int(found.group(1)) if found else 0
    finally:
        stop.set()
        for writer in writers:
            writer.join(30)
    assert [w.unexpected for w in writers] == [[]] * WRITERS
    # Kills came while runs were under way: some were resumed at a start.
    assert resumed > 0

    for writer in writers:
        writer.complete_every_turn()
        writer.turn()  # more confided turns: their runs read whatever is still unread
    runs = _settled(host, token, bot)
    assert all("note" in run for run in runs if run["status"] in ("skipped", "failed")), runs

    entries = host.call(token, "GET", f"/v1/bots/{bot}/memory")["entries"]
    sources = Counter(
        (s["chat"], s["item"]) for e in entries if e["layer"] == "fact" for s in e["sources"]
    )
    twice = {source: n for source, n in sources.items() if n > 1}
    assert twice == {}, f"items learned twice: {twice}"
    said = set()
    for writer in writers:
        items = host.call(token, "GET", f"/v1/chats/{writer.chat}/items")["items"]
        said |= {(writer.chat, i["id"]) for i in items if i["role"] == "user"}
    assert said == set(sources), f"never learned: {sorted(said - set(sources))}"
    assert sum(w.turns for w in writers) >= len(KILLS)
