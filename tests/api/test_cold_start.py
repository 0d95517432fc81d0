"""What a cold start imports, checked in a fresh interpreter: no AWS SDK, no Encryption SDK,
no pydantic v1 and no X-Ray SDK (ADRs 0027 and 0043). The learning steps do not import
FastAPI either. A family's function (API_FAMILY, ADR 0069) imports only its own routers, no
service module and none of learning's rules, and not the wiring of the services
(bootstrap), which loads with them at the first request that needs them.
FastAPI's OpenAPI models are built by the first `/openapi.json` (ADR 0071)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("boto3", "aws_encryption_sdk", "pydantic.v1", "aws_xray_sdk")

PROBE = """
import gc, json, sys
HEAVY = {heavy!r}
import functions.api.handler as h
collector = [gc.isenabled(), gc.get_freeze_count() > 0]
from fastapi.openapi import models
from fastapi.testclient import TestClient
def built():
    found = (getattr(models, n) for n in dir(models))
    return sorted(c.__name__ for c in found if isinstance(c, type)
        and issubclass(c, models.BaseModel) and c.__module__ == models.__name__
        and c.__pydantic_complete__)
before = sorted(m for m in HEAVY if m in sys.modules)
at_import = built()
answer = TestClient(h.app).get("/healthz")
after = sorted(m for m in HEAVY if m in sys.modules)
after_health = built()
document = TestClient(h.app).get("/openapi.json").json()
print(json.dumps({{"status": answer.status_code, "at_import": before, "after_health": after,
    "openapi_models": [at_import, after_health, "OpenAPI" in built()],
    "documented": "/v1/bots/{{botId}}" in document["paths"], "collector": collector}}))
"""

STEPS_PROBE = """
import json, sys
import functions.learning_steps.handler
print(json.dumps(sorted(m for m in {heavy!r} + ("fastapi",) if m in sys.modules)))
"""


FAMILY_PROBE = """
import json, sys
import functions.api.handler as h
from fastapi.testclient import TestClient
loaded = lambda: sorted(m for m in sys.modules if m.startswith("agent_memory.api.routers."))
at_import = loaded()
wired = "agent_memory.bootstrap" in sys.modules
health = TestClient(h.app).get("/healthz").status_code
services = sorted(m for m in sys.modules if m.startswith("agent_memory.service."))
rules = sorted(m for m in {rules!r} if m in sys.modules)
print(json.dumps({{"routers": at_import, "wired": wired, "health": health,
    "heavy": sorted(m for m in {heavy!r} if m in sys.modules),
    "after_health": "agent_memory.bootstrap" in sys.modules,
    "services": services, "rules": rules}}))
"""
# Learning's rules (secret detectors, consolidation, proposals, the model tasks): loaded with
# the services at the first request that needs them, never by a family's routes.
RULES = (
    "agent_memory.domain.secrets",
    "agent_memory.domain.consolidation",
    "agent_memory.domain.proposals",
    "agent_memory.domain.session_memory",
    "agent_memory.domain.tasks.learning_changes",
    "agent_memory.persistence.keys",
)


def _run(probe: str, family: str | None = None) -> object:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'layers/core'}:{ROOT}"}
    env.pop("API_FAMILY", None)
    env |= {"API_FAMILY": family} if family else {}
    done = subprocess.run(
        [sys.executable, "-c", probe.format(heavy=HEAVY, rules=RULES)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_cold_start_imports_only_what_it_needs() -> None:
    """FastAPI's OpenAPI models are built by the first `/openapi.json`, not at import nor by
    a request (api/_cold_start.py: a pydantic or FastAPI upgrade that breaks the deferral
    fails here); the two built at import are the ones FastAPI's security classes and our
    bearer dependency instantiate. The collector, paused while the handler imports, is on
    again after it, with what the import built frozen."""
    assert _run(PROBE) == {
        "status": 200,
        "at_import": [],
        "after_health": [],
        "openapi_models": [["HTTPBearer", "OAuthFlows"], ["HTTPBearer", "OAuthFlows"], True],
        "documented": True,
        "collector": [True, True],
    }


def test_the_openapi_models_are_deferred_through_a_hook_pydantic_still_has() -> None:
    """The hook defer_openapi_models patches while FastAPI imports: pydantic's
    `ConfigWrapper.for_model(bases, namespace, kwargs)`, whose result carries `config_dict`."""
    import inspect

    from pydantic._internal._config import ConfigWrapper

    assert list(inspect.signature(ConfigWrapper.for_model).parameters) == [
        "bases",
        "namespace",
        "kwargs",
    ]
    wrapper = ConfigWrapper.for_model((), {"__module__": "x"}, {})
    assert isinstance(wrapper.config_dict, dict)


def test_a_learning_step_cold_start_imports_no_web_framework_and_no_sdk() -> None:
    assert _run(STEPS_PROBE) == []


@pytest.mark.parametrize(
    ("family", "routers", "health"),
    [
        ("identity", ["admin", "capabilities", "health", "me"], 200),
        ("bots", ["bots"], 404),
        ("chats", ["chats"], 404),
        ("sessions", ["sessions"], 404),
    ],
)
def test_a_family_function_imports_only_its_routers(
    family: str, routers: list[str], health: int
) -> None:
    assert _run(FAMILY_PROBE, family) == {
        "routers": [f"agent_memory.api.routers.{name}" for name in routers],
        "wired": False,
        "health": health,
        "heavy": [],
        "after_health": False,
        # The Services type only (the routes' annotations), no service module.
        "services": ["agent_memory.service.registry"],
        "rules": [],
    }


def test_what_the_process_keeps_is_built_without_collections_then_frozen() -> None:
    """The import and the first wiring of the services pause the collector, then freeze
    what they built; the collector is on again after, as it was before."""
    import gc

    from agent_memory.process import built_for_good

    collecting, frozen = gc.isenabled(), gc.get_freeze_count()
    with built_for_good():
        paused = not gc.isenabled()
        kept = [[n] for n in range(100)]
    assert paused
    assert gc.isenabled() == collecting
    assert gc.get_freeze_count() >= frozen + len(kept)


def test_a_cold_start_keeps_only_its_first_build_for_good() -> None:
    """The process's first wiring of the services is built with the collector paused (the
    learning steps' and the API's alike); a rebuild after `reset()` collects as usual."""
    import gc
    from typing import Any

    from agent_memory.process import ColdStart

    collecting: list[bool] = []

    def build() -> Any:
        collecting.append(gc.isenabled())
        return object()

    before = gc.isenabled()
    cold = ColdStart(build)
    first = cold()
    assert cold() is first
    cold.reset()
    cold()
    assert collecting == [False, before]
    assert gc.isenabled() == before
