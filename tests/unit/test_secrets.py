"""Memory never keeps passwords, keys, tokens or links that give access (seed 000): the
detector's reasons, and a learning run whose model proposes secrets leaving no plaintext trace.
The corpus of phrasings is tests/unit/test_secret_corpus.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent_memory.bootstrap import build_services
from agent_memory.config import Settings
from agent_memory.domain.identity import SERVICE_ADMIN, Principal
from agent_memory.domain.model_gate import SECRET
from agent_memory.domain.proposals import MEMORY_KINDS
from agent_memory.domain.secret_words import (
    ACCESS_LINK,
    API_TOKEN,
    CLOUD_KEY,
    LOGIN,
    PASSWORD,
    PIN,
    PRIVATE_KEY,
    RANDOM_STRING,
)
from agent_memory.domain.secrets import looks_secret
from agent_memory.domain.sessions import NewItem
from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.domain.tasks.memory_changes import MEMORY_CHANGES, LearningRequest
from agent_memory.service.learning_pools import PoolRef
from agent_memory.wiring import Adapters
from tests.support.in_memory import (
    FakeCipher,
    FixedClock,
    InMemoryStore,
    RecordingOrchestrator,
    SequentialIds,
)
from tests.support.learning_doubles import Catalog, ScriptedModel


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # passwords
        ("My password is hunter2", PASSWORD),
        ("the wifi password is CorrectHorse", PASSWORD),
        ("The password for the staging db is s3cr3t!", PASSWORD),
        ("pwd: abc123", PASSWORD),
        ("Password = 'letmein'", PASSWORD),
        ("Passwort: Sommer2024", PASSWORD),
        ("my PIN is 4921", PIN),
        # cloud keys and tokens
        ("key id AKIAIOSFODNN7EXAMPLE", CLOUD_KEY),
        ("temporary creds ASIAY34FZKBOKMUTVV7A", CLOUD_KEY),
        ("use sk-proj-abcdefghijklmnopqrstuvwx1234 for the API", API_TOKEN),
        ("sk-ant-api03-abcdefghijklmnopqrstu", API_TOKEN),
        ("stripe sk_live_51Habcdefghijkl", API_TOKEN),
        ("ghp_1234567890abcdefghijABCDEFGHIJ123456", API_TOKEN),
        ("github_pat_11ABCDEFG0123456789_abcdefghij", API_TOKEN),
        ("slack xoxb-123456789012-abcdefghijkl", API_TOKEN),
        ("maps key AIzaSyD-abcdefghijklmnopqrstuvwxyz12345", API_TOKEN),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            API_TOKEN,
        ),
        ("Authorization: Bearer abcdefghijklmnop.qrstuv", API_TOKEN),
        ("my API key is 9f8e7d6c5b4a", API_TOKEN),
        ("api_key=ZXhhbXBsZQ", API_TOKEN),
        ("token: abc-def-ghi", API_TOKEN),
        ("the client secret is Zk8yQ2xhYmNk", API_TOKEN),
        # private keys
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow...", PRIVATE_KEY),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", PRIVATE_KEY),
        ("-----BEGIN PRIVATE KEY-----", PRIVATE_KEY),
        ("-----BEGIN PGP PRIVATE KEY BLOCK-----", PRIVATE_KEY),
        # links that give access
        (
            "https://bucket.s3.amazonaws.com/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Signature=8f2a3b",
            ACCESS_LINK,
        ),
        ("see https://files.example.com/a.zip?sig=abcdef123&se=2030", ACCESS_LINK),
        ("https://app.example.com/login?token=abc123def", ACCESS_LINK),
        ("https://example.com/callback#access_token=ya29.abcd&expires_in=3600", ACCESS_LINK),
        ("https://maps.example.com/api?key=AbCd1234", ACCESS_LINK),
        ("https://admin:s3cret@db.internal.example.com:5432/app", ACCESS_LINK),
        ("join us: https://example.com/invite/Xk29aPq7", ACCESS_LINK),
        ("https://app.example.com/reset-password/8c1f9e2a-77d1-4a0b", ACCESS_LINK),
        ("https://app.example.com/magic-link?t=a1b2c3d4e5", ACCESS_LINK),
        ("https://discord.gg/aBcDeF12", ACCESS_LINK),
        ("https://chat.whatsapp.com/KpLz8Q3rT0m", ACCESS_LINK),
        # long random strings
        ("the secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", API_TOKEN),
        ("aws: wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY9x2", RANDOM_STRING),
        ("value jk0ojk648mqrnumjtnl7jic20addj648", RANDOM_STRING),
    ],
)
def test_secrets_are_recognized_with_their_reason(text: str, reason: str) -> None:
    assert looks_secret(text) == reason


@pytest.mark.parametrize(
    "text",
    [
        "my budget is 1500 EUR",
        "The trip budget is 1500 EUR.",
        "Ana likes short answers with a list of changes.",
        "Run the tests before you report that work is done.",
        "The team uses Effect for all new services.",
        "I forgot my password yesterday and had to reset it.",
        "The password is required for the admin console.",
        "The password is stored in the team vault.",
        "Passwords must be at least 12 characters long.",
        "Rotate the API key every 90 days.",
        "We need an API key for the weather service.",
        "The token is expired.",
        "the access token was rotated",
        "the key is to ship small changes",
        "Docs are at https://docs.python.org/3/library/urllib.parse.html#url-parsing",
        "See https://github.com/org/repo/pull/123?tab=files",
        "https://www.google.com/search?q=invite+only+events",
        "Book at https://example.com/hotels/berlin?checkin=2025-05-01&nights=3",
        "https://example.com/blog/how-to-reset-your-router",
        "the fix is commit f44e0674e8306645d02f353ef58a9bc698b04acd",
        "order 123e4567-e89b-12d3-a456-426614174000 shipped",
        "customer-onboarding-checklist-2024-v2-final is the file name",
        "release-2024-plan-for-the-marketing-team-q3",
        "Call me at +49 30 1234567 after 5 pm.",
        "The meeting room PIN board is by the door.",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert looks_secret(text) is None


# --- through the learning workflow --------------------------------------------------------

HELPER = "openai/helper"


def _plaintext(value: Any) -> Iterator[str]:
    """Every string a row keeps readable: sealed bytes are skipped (the cipher's output)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for name, inner in value.items():
            yield str(name)
            yield from _plaintext(inner)
    elif isinstance(value, list | tuple | set | frozenset):
        for inner in value:
            yield from _plaintext(inner)


def _drive(services: Any, name: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """LoadEvidence -> CallModel -> ApplyLearning, as the state machine runs them."""
    state: dict[str, Any] = dict(payload)
    learning = services.learning
    steps = [
        ("LoadEvidence", learning.load_evidence, "evidence"),
        ("CallModel", learning.call_model, "model"),
        ("ApplyLearning", learning.apply_learning, "result"),
    ]
    for step, run, path in steps:
        context = {"executionName": name, "executionId": name, "state": step, "attempt": 0}
        state[path] = run({"input": json.loads(json.dumps(state)), "context": context})
    return state


def test_no_plaintext_row_carries_a_secret_a_model_proposed() -> None:
    store, orchestrator = InMemoryStore(), RecordingOrchestrator()
    adapters = Adapters(store, FakeCipher(), FixedClock(step_ms=1), SequentialIds(), orchestrator)

    def script(request: ModelRequest) -> str:
        source = request.input.items[0].id
        changes = [
            # A key built from the value, and a content holding it: both are refused.
            ("admin-login-root-hunter2", "The admin login is documented in the runbook."),
            ("deploy", "Deploy as root with the password hunter2 over ssh."),
            ("budget", "The budget is 1500 EUR."),
        ]
        return json.dumps(
            {
                "changes": [
                    {"op": "remember", "key": key, "content": content, "kind": "decision"}
                    | {"sources": [source]}
                    for key, content in changes
                ]
            }
        )

    model = ScriptedModel(name=HELPER, script=script)
    adapters.models = Catalog({HELPER: model})
    services = build_services(Settings(default_model=HELPER), adapters)
    services.identity.create_org(SERVICE_ADMIN, "acme", "Acme")
    services.identity.create_user(SERVICE_ADMIN, "acme", "ana", "Ana", "member")
    services.org_settings.patch(SERVICE_ADMIN, "acme", {"helperModel": HELPER})
    ana = Principal("ana", "acme", "member")
    agent = services.agents.create(ana, "Ops")
    session = services.sessions.create(ana, agent.id, model=HELPER)
    said = "The admin login is root / hunter2. Our budget is 1500 EUR."
    services.sessions.turn(ana, session.id, [NewItem("user", said)])

    # Both pools learn from the turn: the session's memory and the agent's.
    assert {payload["pool"]["kind"] for payload in orchestrator.started.values()} == {
        "session",
        "agent",
    }
    results = [_drive(services, n, p)["result"] for n, p in orchestrator.started.items()]

    assert [r["status"] for r in results] == ["succeeded", "succeeded"]
    session_memory = {e.meta.name for e in services.session_memory.read(ana, session.id).entries}
    agent_memory = {e.meta.name for e in services.agent_memory.read(ana, agent.id).entries}
    assert set(session_memory) == set(agent_memory) == {"budget"}
    for execution in [
        *services.learning.executions(PoolRef("session", "acme", session.id)),
        *services.agent_memory.executions(ana, agent.id),
    ]:
        assert execution.applied == [{"key": "budget", "op": "remember"}]
        assert [r["reason"] for r in execution.rejected] == [
            SECRET.format(what=LOGIN),
            SECRET.format(what=PASSWORD),
        ]
    readable = [text for row in store.rows.values() for text in _plaintext(row)]
    assert readable  # the rows were scanned: entries, heads, executions, logs
    assert not [text for text in readable if "hunter2" in text]


# --- cost -----------------------------------------------------------------------------------

COLD_PROBE = """
import json, sys
import functions.api.handler as h
import functions.learning_steps.handler
from fastapi.testclient import TestClient
from agent_memory.domain.secrets import looks_secret
TestClient(h.app).get("/healthz")
before = sorted(m for m in ("detect_secrets", "mnemonic", "requests") if m in sys.modules)
looks_secret("nothing to see")
after = "detect_secrets" in sys.modules
print(json.dumps({"before": before, "after": after}))
"""


def test_the_detector_library_is_imported_at_the_first_check_not_on_a_cold_start() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", COLD_PROBE],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{root / 'layers/core'}:{root}"},
        cwd=root,
        check=True,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"before": [], "after": True}


def test_the_prompt_names_every_kind_of_secret_and_keys_never_after_values() -> None:
    prompt = MEMORY_CHANGES.system(LearningRequest("agent", (), (), MEMORY_KINDS, "Ana")).lower()
    for kind in ("passphrases", "pins and door codes", "recovery codes", "card numbers"):
        assert kind in prompt
    assert "never after its value" in prompt
