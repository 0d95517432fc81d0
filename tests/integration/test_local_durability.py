"""`make run` keeps what it acknowledged and learns interrupted evidence exactly once.

The real local service (`python -m infra.local.serve`, what `make run` runs) is started as
a subprocess in its own process group on a temporary data directory, with an
OpenAI-compatible model served by this test that can be made slow. The whole group is
killed with SIGKILL right after acknowledged writes, and again while a learning run waits
for the model; each restart on the same directory must find every acknowledged write,
the fact learned before the kills once, and the interrupted evidence learned once.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.local_server import free_port, spawn
from tests.support.notes_model import NotesModel

ROOT = Path(__file__).resolve().parents[2]
MODEL = "openai/notes-1"


class Service:
    """One run of `python -m infra.local.serve` in its own process group."""

    def __init__(self, data_dir: Path, model: NotesModel, log: Path) -> None:
        self.port = free_port()
        env = {
            "PORT": str(self.port),
            "MEMORY_DATA_DIR": str(data_dir),
            "OPENAI_BASE_URL": model.url,
            "OPENAI_API_KEY": "sk-test-durability",
            "DEFAULT_MODEL": MODEL,
            "LOG_LEVEL": "WARNING",
        }
        self.log = log
        self.proc = spawn(env, log)
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=20)
        deadline = time.monotonic() + 40
        while True:
            assert self.proc.poll() is None, f"the service exited:\n{self.output()}"
            try:
                if self.http.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"no /healthz:\n{self.output()}"
            time.sleep(0.1)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL to the whole process group: nothing gets to flush or clean up."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.http.close()

    def stop(self) -> int:
        os.killpg(self.proc.pid, signal.SIGTERM)
        code = self.proc.wait(20)
        self.http.close()
        return code

    def call(self, token: str, method: str, path: str, body: Any = None, ok: int = 200) -> Any:
        answer = self.http.request(
            method, path, json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == ok, f"{method} {path}: {answer.status_code} {answer.text}"
        return answer.json() if answer.content else None

    def executions(self, token: str, session: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.call(token, "GET", f"/v1/sessions/{session}/learning")[
            "executions"
        ]
        return found

    def settled(self, token: str, session: str, count: int) -> list[dict[str, Any]]:
        """The session's executions once `count` exist and none is running."""
        deadline = time.monotonic() + 30
        while True:
            found = self.executions(token, session)
            if len(found) >= count and all(e["status"] != "running" for e in found):
                return found
            assert time.monotonic() < deadline, f"learning did not settle: {found}"
            time.sleep(0.1)


@pytest.fixture
def model() -> Iterator[NotesModel]:
    notes = NotesModel()
    yield notes
    notes.close()


def _turn(service: Service, token: str, session: str, text: str) -> list[str]:
    answer = service.call(
        token,
        "POST",
        f"/v1/sessions/{session}/turns",
        {"items": [{"role": "user", "content": text}]},
    )
    assert answer["turn"]["learning"] == "started"
    ids: list[str] = answer["turn"]["itemIds"]
    return ids


def test_acknowledged_writes_and_learning_survive_kill_9(tmp_path: Path, model: NotesModel) -> None:
    data = tmp_path / "data"
    first = Service(data, model, tmp_path / "first.log")
    try:
        printed = re.search(
            r"admin token \(shown this once; kept in (\S+)\): (\S+)", first.output()
        )
        assert printed is not None, first.output()
        token_file, admin = Path(printed.group(1)), printed.group(2)
        assert token_file == data.resolve() / "admin-token"
        assert oct(token_file.stat().st_mode & 0o777) == "0o600"
        assert oct(data.stat().st_mode & 0o777) == "0o700"

        org = first.call(admin, "POST", "/v1/admin/organizations", {"name": "Durable"}, 201)["id"]
        first.call(admin, "PATCH", f"/v1/organizations/{org}/settings", {"agentMemory": False})
        user = first.call(admin, "POST", "/v1/admin/users", {"organizationId": org}, 201)
        ana = user["token"]
        # Her own second token (an administrator's would replace the first).
        second_token = first.call(ana, "POST", "/v1/me/tokens", {}, 201)["token"]
        agent = first.call(ana, "POST", "/v1/agents", {"name": "Planner"}, 201)["agent"]["id"]
        session = first.call(ana, "POST", "/v1/sessions", {"agentId": agent}, 201)["session"]
        sid = session["id"]
        budget_items = _turn(first, ana, sid, "My budget is 1500 EUR.")
        (learned,) = first.settled(ana, sid, 1)
        assert (learned["status"], learned["applied"]) == (
            "succeeded",
            [{"key": "budget", "op": "remember"}],
        )
        view = first.call(ana, "GET", f"/v1/sessions/{sid}")["session"]
        remembered = first.call(
            ana,
            "POST",
            f"/v1/sessions/{sid}/memory",
            {
                "expected": view["head"],
                "revision": view["revision"],
                "command": {"_tag": "Remember", "key": "seat", "content": "Aisle.", "kind": "fact"},
            },
        )["session"]
        tone = {
            "_tag": "Remember",
            "key": "tone",
            "content": "Brief answers.",
            "kind": "preference",
        }
        first.call(ana, "POST", f"/v1/agents/{agent}/memory", {"expected": 0, "command": tone})
        memo = first.call(
            ana,
            "POST",
            "/v1/agent_memories",
            {"category": "fact", "content": "Orders 40 pallets.", "importance": 0.5},
            201,
        )["id"]
    finally:
        first.kill()  # at once after the last acknowledgement

    second = Service(data, model, tmp_path / "second.log")
    try:
        assert admin not in second.output()
        assert str(token_file) in second.output()

        def everything_acknowledged(service: Service) -> dict[str, Any]:
            settings = service.call(admin, "GET", f"/v1/organizations/{org}/settings")
            assert settings["agentMemory"] is False
            assert service.call(second_token, "GET", f"/v1/agents/{agent}")["agent"]["id"] == agent
            assert service.call(ana, "GET", f"/v1/agent_memories/{memo}")["content"] == (
                "Orders 40 pallets."
            )
            agent_memory = service.call(ana, "GET", f"/v1/agents/{agent}/memory")
            assert agent_memory["entries"]["tone"]["content"] == "Brief answers."
            memory = service.call(ana, "GET", f"/v1/sessions/{sid}/memory")
            assert memory["entries"]["seat"]["content"] == "Aisle."
            assert memory["entries"]["budget"]["sources"] == budget_items
            return memory

        everything_acknowledged(second)
        assert second.call(ana, "GET", f"/v1/sessions/{sid}")["session"] == remembered
        assert [e["id"] for e in second.executions(ana, sid)] == [learned["id"]]
        assert model.asked_about == [budget_items]  # nothing was learned again

        model.slow = True
        hotel_items = _turn(second, ana, sid, "My hotel is the Ritz.")
        assert model.asked.wait(30), "the learning run never asked the model"
    finally:
        second.kill()  # while CallModel waits for the model's answer

    model.slow = False
    third = Service(data, model, tmp_path / "third.log")
    try:
        assert "1 unfinished execution(s) resumed" in third.output()
        executions = third.settled(ana, sid, 2)
        hotel_runs = [e for e in executions if e["itemIds"] == hotel_items]
        assert [(e["status"], e["applied"]) for e in hotel_runs] == [
            ("succeeded", [{"key": "hotel", "op": "remember"}])
        ]
        memory = everything_acknowledged(third)
        assert memory["entries"]["hotel"]["sources"] == hotel_items
        assert memory["entries"]["hotel"]["content"] == "The hotel is the Ritz."
        assert [e for e in executions if e["itemIds"] == budget_items] == [learned]
        # Asked once before the kill and once after recovery, and never again.
        assert model.asked_about == [budget_items, hotel_items, hotel_items]
    finally:
        assert third.stop() == 0, third.output()
