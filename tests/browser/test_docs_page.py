"""`GET /docs` (API.md "Clients"): Swagger UI served by the API, no CDN, in headless Chromium."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from tests.support.local_server import LocalServer


def test_the_docs_page_shows_every_route_and_loads_nothing_from_elsewhere(
    local_server: LocalServer, page: Any
) -> None:
    with urllib.request.urlopen(f"{local_server.url}/openapi.json") as answer:
        document = json.load(answer)
    page.goto(f"{local_server.url}/docs")
    page.wait_for_selector(".opblock", timeout=30_000)
    shown = {
        (block.get_attribute("class") or "", block.inner_text())
        for block in page.query_selector_all(".opblock-summary-path")
    }
    paths = {text.replace("\u200b", "") for _cls, text in shown}
    assert set(document["paths"]) <= paths, set(document["paths"]) - paths
    for route in ("/v1/agents", "/v1/sessions/{sessionId}/items", "/v1/agent_memories"):
        assert route in paths
    # The page asked only this server, and threw nothing.
    assert all(url.startswith(local_server.url) for url in page.requested), page.requested
    assert page.errors == []
    # "Authorize" takes the bearer token a reader types.
    page.click("button.authorize")
    assert page.wait_for_selector("text=HTTPBearer", timeout=10_000) is not None


def test_the_docs_page_needs_no_token_and_serves_only_its_files(
    local_server: LocalServer,
) -> None:
    with urllib.request.urlopen(f"{local_server.url}/docs") as answer:
        assert answer.status == 200
        assert "swagger-ui-bundle.js" in answer.read().decode()
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{local_server.url}/docs/assets/..%2Fcore.py")
    assert refused.value.code == 404
