"""`make run` with `EMBEDDING_MODEL=openai/<model>` and no size, `OPENAI_BASE_URL` at an
OpenAI-compatible embedding server (an Ollama or vLLM user's setup): the server starts even
while the embedding server is down, recall works once it answers, and after a restart the
index still holds what was learned, in the size it learned."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.embedding_server import embedding_server
from tests.support.local_server import LocalServer, local_server

MODEL = "openai/nomic-embed-text"


def call(server: LocalServer, method: str, path: str, token: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        f"{server.url}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method=method,
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def recalled(server: LocalServer, token: str, thread: str, text: str) -> list[str]:
    """The context's recalled messages for `text`, once the background indexed them (the
    runner works in the server's own threads)."""
    body = {"message": {"role": "user", "content": text}}
    deadline = time.monotonic() + 30
    while True:
        context = call(server, "POST", f"/v1/threads/{thread}/context", token, body)
        found = [m["content"] for g in context["recalled"] for m in g["messages"]]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.3)


def test_make_run_learns_the_size_of_an_embedding_model_and_keeps_it(tmp_path: Path) -> None:
    with embedding_server(dimensions=32) as embedder:
        embedder.down = True
        settings = {"EMBEDDING_MODEL": MODEL, "OPENAI_BASE_URL": embedder.url}
        with local_server(tmp_path, **settings) as server:
            admin = server.admin_token
            org = call(server, "POST", "/v1/admin/organizations", admin, {"name": "Acme"})
            person = call(server, "POST", "/v1/admin/users", admin, {"organizationId": org["id"]})
            token = person["token"]
            capabilities = call(server, "GET", "/v1/capabilities", token)
            assert capabilities["embedders"] == [{"name": MODEL, "dimensions": None}]
            agent = call(server, "POST", "/v1/agents", token, {"name": "helper"})["agent"]["id"]
            options = {"lastMessages": 1, "semanticRecall": {"topK": 1, "messageRange": 0}}
            memory = {"memory": {"options": options}}
            call(server, "PATCH", f"/v1/agents/{agent}/draft", token, memory)
            number = call(server, "POST", f"/v1/agents/{agent}/publish", token, {})
            activate = f"/v1/agents/{agent}/versions/{number['version']['number']}/activate"
            call(server, "POST", activate, token, {})
            embedder.down = False
            past = call(server, "POST", "/v1/threads", token, {"agentId": agent})["thread"]["id"]
            messages = [
                {"role": "user", "content": "I adopted a cat named Miso last spring."},
                {"role": "assistant", "content": "Cats are great company."},
                {"role": "user", "content": "The weather was grey today."},
            ]
            call(server, "POST", f"/v1/threads/{past}/messages", token, {"messages": messages})
            now = call(server, "POST", "/v1/threads", token, {"agentId": agent})["thread"]["id"]
            question = "Which cat did I adopt last spring?"
            assert recalled(server, token, now, question) == [messages[0]["content"]]
            capabilities = call(server, "GET", "/v1/capabilities", token)
            assert capabilities["embedders"] == [{"name": MODEL, "dimensions": 32}]
        with local_server(tmp_path, **settings) as again:
            assert recalled(again, token, now, question) == [messages[0]["content"]]
        assert set(embedder.asked) == {None}
