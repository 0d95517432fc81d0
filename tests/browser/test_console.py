"""The console at /console, driven in headless Chromium as a person would use it.

The real local service (`python -m infra.local.serve`, what `make run` runs) serves the page and
the API; a scripted OpenAI-compatible model learns "My X is Y." and also proposes one change
citing an item that does not exist, so learning has something applied and something rejected.
With CONSOLE_SCREENSHOTS=<dir> the test saves the main views there (docs/console.md's images:
`make console-screenshots`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.local_server import LocalServer, local_server
from tests.support.notes_model import NotesModel

ROOT = Path(__file__).resolve().parents[2]
SHOTS = os.environ.get("CONSOLE_SCREENSHOTS")

playwright_api = pytest.importorskip("playwright.sync_api")


class Service:
    """Calls to the local server (tests/support/local_server.py) as one token or another."""

    def __init__(self, server: LocalServer) -> None:
        self.base = server.url
        self.admin = server.admin_token
        self.http = httpx.Client(base_url=self.base, timeout=20)

    def call(self, token: str, method: str, path: str, body: Any = None, ok: int = 200) -> Any:
        answer = self.http.request(
            method, path, json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == ok, f"{method} {path}: {answer.status_code} {answer.text}"
        return answer.json() if answer.content else None


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A running service with one admin user, an agent, and a session whose turn was learned."""
    model = NotesModel(invent=True)
    settings = {
        "OPENAI_BASE_URL": model.url,
        "OPENAI_API_KEY": "sk-test-console",
        "DEFAULT_MODEL": "openai/notes-1",
        "LOG_LEVEL": "WARNING",
    }
    with local_server(tmp_path_factory.mktemp("console"), **settings) as server:
        service = Service(server)
        admin = server.admin_token
        service.call(admin, "POST", "/v1/admin/organizations", {"id": "acme", "name": "Acme"}, 201)
        user = service.call(
            admin,
            "POST",
            "/v1/admin/users",
            {"organizationId": "acme", "id": "ada", "role": "admin"},
            201,
        )
        token = user["token"]
        agent = service.call(token, "POST", "/v1/agents", {"name": "Trip planner"}, 201)["agent"]
        session = service.call(token, "POST", "/v1/sessions", {"agentId": agent["id"]}, 201)[
            "session"
        ]
        turn = service.call(
            token,
            "POST",
            f"/v1/sessions/{session['id']}/turns",
            {
                "items": [
                    {"role": "user", "content": "My budget is 1500 EUR."},
                    {"role": "assistant", "content": "Noted: 1500 EUR."},
                ]
            },
        )["turn"]
        deadline = time.monotonic() + 30
        while True:
            runs = service.call(token, "GET", f"/v1/sessions/{session['id']}/learning")[
                "executions"
            ]
            if runs and runs[0]["status"] not in ("running", "waiting"):
                break
            assert time.monotonic() < deadline, runs
            time.sleep(0.1)
        assert runs[0]["status"] == "succeeded", runs
        yield {
            "service": service,
            "token": token,
            "agent": agent,
            "session": session,
            "budget_item": turn["itemIds"][0],
        }
        service.http.close()
    model.close()


@pytest.fixture(autouse=True)
def _no_page_errors(page: Any) -> Iterator[None]:
    """Whatever a test does, the console threw nothing and asked no other host."""
    page.set_default_timeout(10_000)
    yield
    assert page.errors == []
    assert all(url.startswith("http://127.0.0.1:") for url in page.requested), page.requested


def _shot(page: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def _sign_in(page: Any, world: dict[str, Any], fragment: str = "") -> None:
    page.goto(f"{world['service'].base}/console{fragment}")
    page.get_by_label("Bearer token").fill(world["token"])
    page.get_by_role("button", name="Sign in").click()
    playwright_api.expect(page.locator("#whoami")).to_have_text("ada · acme · admin")


def _draft(world: dict[str, Any]) -> dict[str, Any]:
    answer = world["service"].call(
        world["token"], "GET", f"/v1/agents/{world['agent']['id']}/draft"
    )
    options: dict[str, Any] = (answer["draft"]["memory"] or {}).get("options", {})
    return options


def test_signing_in_with_a_wrong_token_says_so_and_keeps_the_form(
    page: Any, world: dict[str, Any]
) -> None:
    page.goto(f"{world['service'].base}/console")
    _shot(page, "sign-in")
    page.get_by_label("Bearer token").fill("not-a-token")
    page.keyboard.press("Enter")  # the form works from the keyboard
    playwright_api.expect(page.get_by_role("alert")).to_contain_text("refused")
    playwright_api.expect(page.get_by_label("Bearer token")).to_be_visible()


def test_a_service_key_cannot_sign_in(page: Any, world: dict[str, Any]) -> None:
    service = world["service"]
    key = service.call(
        service.admin, "POST", "/v1/organizations/acme/service-keys", {"name": "backend"}, 201
    )["key"]
    page.goto(f"{service.base}/console")
    page.get_by_label("Bearer token").fill(key)
    page.get_by_role("button", name="Sign in").click()
    playwright_api.expect(page.get_by_role("alert")).to_contain_text("service key cannot sign in")
    playwright_api.expect(page.get_by_label("Bearer token")).to_be_visible()


def test_switching_an_option_and_saving_changes_the_draft(page: Any, world: dict[str, Any]) -> None:
    _sign_in(page, world, f"#/agent/{world['agent']['id']}")
    page.get_by_label("Semantic recall").check()
    page.get_by_label("topK").fill("7")
    page.get_by_role("button", name="Save draft").click()
    playwright_api.expect(
        page.get_by_role("status").filter(has_text="Draft saved.")
    ).to_be_visible()
    assert _draft(world)["semanticRecall"] == {"topK": 7}
    _shot(page, "memory-options")


def test_a_value_out_of_range_shows_the_servers_error_at_its_field(
    page: Any, world: dict[str, Any]
) -> None:
    _sign_in(page, world, f"#/agent/{world['agent']['id']}")
    before = _draft(world)
    page.get_by_label("Semantic recall").check()
    page.get_by_label("topK").fill("99")
    page.get_by_role("button", name="Save draft").click()
    field = page.locator('[data-path="memory.options.semanticRecall.topK"]')
    playwright_api.expect(field.locator(".field-error")).to_be_visible()
    playwright_api.expect(page.get_by_label("topK")).to_have_attribute("aria-invalid", "true")
    _shot(page, "validation-error")
    assert _draft(world) == before  # nothing saved


def test_the_preset_saves_the_seeds_cross_conversation_combination(
    page: Any, world: dict[str, Any]
) -> None:
    _sign_in(page, world, f"#/agent/{world['agent']['id']}")
    page.get_by_role("button", name="Remember a user across conversations and runs").click()
    playwright_api.expect(page.get_by_label("Observer manages working memory")).to_be_checked()
    _shot(page, "preset")
    page.get_by_role("button", name="Save draft").click()
    playwright_api.expect(
        page.get_by_role("status").filter(has_text="Draft saved.")
    ).to_be_visible()
    options = _draft(world)
    assert options["workingMemory"] == {"scope": "resource"}
    assert options["observationalMemory"]["observation"] == {
        "manageWorkingMemory": True,
        "bufferOnIdle": True,
        "threadTitle": True,
    }
    page.get_by_role("button", name="Publish the draft").click()
    playwright_api.expect(page.get_by_text("Published version 1.")).to_be_visible()
    page.locator('[data-activate="1"]').click()
    playwright_api.expect(page.get_by_text("Threads use version 1.")).to_be_visible()


def test_a_learned_fact_shows_with_its_source_and_a_rejected_change_with_its_reason(
    page: Any, world: dict[str, Any]
) -> None:
    _sign_in(page, world, f"#/session/{world['session']['id']}")
    row = page.locator('#entries tr[data-key="budget"]')
    playwright_api.expect(row).to_contain_text("The budget is 1500 EUR.")
    source = row.get_by_role("link", name=world["budget_item"])
    playwright_api.expect(source).to_have_attribute("href", f"#item-{world['budget_item']}")
    text = page.locator("#memory-text pre")
    playwright_api.expect(text).to_contain_text("The budget is 1500 EUR.")
    rejected = page.locator("#learning td.rejected")
    playwright_api.expect(rejected).to_contain_text("made-up")
    reason = rejected.locator(".reason").first
    playwright_api.expect(reason).not_to_be_empty()
    assert "made-up" not in page.locator("#entries").inner_text()
    _shot(page, "session-inspector")
    # The session's agent: its memory, text, change log and learning, one click away.
    page.get_by_role("link", name=world["agent"]["id"]).click()
    playwright_api.expect(page.locator("#entries h2")).to_contain_text("Agent memory (version")
    playwright_api.expect(page.locator("#learning table, #learning .empty").first).to_be_visible()
    _shot(page, "agent-memory")


def test_an_unknown_session_is_a_clear_not_found(page: Any, world: dict[str, Any]) -> None:
    _sign_in(page, world, "#/session/s-does-not-exist")
    playwright_api.expect(page.get_by_role("alert")).to_contain_text("not found")


def test_a_bot_and_a_thread_show_what_the_signed_in_person_may_see(
    page: Any, world: dict[str, Any]
) -> None:
    service, token = world["service"], world["token"]
    bot = service.call(token, "POST", "/v1/bots", {"name": "Team bot"}, 201)["bot"]
    remembered = service.call(
        token,
        "POST",
        f"/v1/bots/{bot['id']}/memory",
        {"command": {"_tag": "Remember", "content": "Standups are at 9:30.", "tags": ["team"]}},
    )["entry"]
    _sign_in(page, world, f"#/bot/{bot['id']}")
    row = page.locator(f'#entries tr[data-key="{remembered["id"]}"]')
    playwright_api.expect(row).to_contain_text("Standups are at 9:30.")
    playwright_api.expect(row).to_contain_text("pinned")
    _shot(page, "bot-memory")

    thread = service.call(token, "POST", "/v1/threads", {"agentId": world["agent"]["id"]}, 201)
    thread_id = thread["thread"]["id"]
    service.call(
        token,
        "POST",
        f"/v1/threads/{thread_id}/messages",
        {"messages": [{"role": "user", "content": "Plan a weekend in Lisbon."}]},
    )
    page.goto(f"{service.base}/console#/thread/{thread_id}")
    playwright_api.expect(page.locator("#messages")).to_contain_text("Plan a weekend in Lisbon.")
    _shot(page, "thread")


def test_the_home_lists_your_agents_sessions_threads_and_bots(
    page: Any, world: dict[str, Any]
) -> None:
    service, token = world["service"], world["token"]
    bot = service.call(token, "POST", "/v1/bots", {"name": "Desk bot"}, 201)["bot"]
    body = {"agentId": world["agent"]["id"], "title": "Lisbon weekend"}
    thread = service.call(token, "POST", "/v1/threads", body, 201)["thread"]
    _sign_in(page, world)
    for where, one, text in [
        ("#home-agents", world["agent"]["id"], "Trip planner"),
        ("#home-sessions", world["session"]["id"], "Trip planner"),
        ("#home-threads", thread["id"], "Lisbon weekend"),
        ("#home-bots", bot["id"], "Desk bot"),
    ]:
        playwright_api.expect(page.locator(f'{where} li[data-id="{one}"]')).to_contain_text(text)
    _shot(page, "home")
    page.locator(f'#home-bots li[data-id="{bot["id"]}"] a').click()
    playwright_api.expect(page).to_have_url(f"{service.base}/console#/bot/{bot['id']}")


def test_a_skipped_run_of_a_bot_shows_why(page: Any, world: dict[str, Any]) -> None:
    service, token = world["service"], world["token"]
    # No memory model is named (botMemoryModel: null): a confide teaches nothing, and says so.
    bot = service.call(token, "POST", "/v1/bots", {"name": "Quiet bot"}, 201)["bot"]
    chat = service.call(token, "POST", "/v1/chats", {"botId": bot["id"]}, 201)["chat"]
    turns = f"/v1/chats/{chat['id']}/turns"
    turn = service.call(token, "POST", turns, {"input": "I take the 8:10 train."}, 201)["turn"]
    service.call(token, "POST", f"{turns}/{turn['id']}/confide", {"text": "I was unsure."})
    service.call(token, "POST", f"{turns}/{turn['id']}/complete", {})
    [run] = service.call(token, "GET", f"/v1/bots/{bot['id']}/learning")["executions"]
    assert run["status"] == "skipped"
    _sign_in(page, world, f"#/bot/{bot['id']}")
    row = page.locator(f'#learning tr[data-execution="{run["id"]}"]')
    playwright_api.expect(row.locator(".badge")).to_have_text("skipped")
    playwright_api.expect(row.locator(".run-note")).to_have_text(run["note"])
    assert "botMemoryModel" in run["note"]
