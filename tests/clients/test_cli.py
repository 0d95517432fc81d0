"""`agent-memory`, the operator CLI, against the local service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_memory_client import Client, Unauthorized
from agent_memory_client.cli import main
from tests.clients.conftest import LocalService


def _cli(
    capsys: pytest.CaptureFixture[str], service: LocalService, token: str, *argv: str
) -> tuple[int, Any, str]:
    code = main(["--url", service.url, "--token", token, *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


def test_an_operator_sets_up_an_organization(
    capsys: pytest.CaptureFixture[str], local_service: LocalService
) -> None:
    admin = local_service.admin_token
    code, org, _ = _cli(capsys, local_service, admin, "orgs", "create", "Acme")
    assert code == 0
    code, user, _ = _cli(
        capsys, local_service, admin, "users", "create", org["id"], "--role", "admin"
    )
    assert (code, user["organizationId"], user["role"]) == (0, org["id"], "admin")
    code, issued, _ = _cli(capsys, local_service, admin, "tokens", "issue", user["id"])
    assert code == 0
    with Client(base_url=local_service.url, token=issued["token"]) as c:
        assert c.me().id == user["id"]

    code, settings, _ = _cli(
        capsys, local_service, admin, "settings", "set", org["id"],
        "--helper-model", "local/rules", "--generate", "false",
    )  # fmt: skip
    assert code == 0
    assert settings["helperModel"] == "local/rules"
    assert settings["memory"] == {"use": True, "generate": False}
    code, settings, _ = _cli(
        capsys, local_service, admin, "settings", "set", org["id"], "--helper-model", "default"
    )
    assert (settings["helperModel"], settings["memory"]["generate"]) == (None, False)
    code, again, _ = _cli(capsys, local_service, issued["token"], "settings", "get", org["id"])
    assert again == settings

    code, revoked, _ = _cli(capsys, local_service, admin, "tokens", "revoke", issued["tokenPrefix"])
    assert (code, revoked) == (0, {"ok": True})
    with (
        Client(base_url=local_service.url, token=issued["token"]) as c,
        pytest.raises(Unauthorized),
    ):
        c.me()


def test_purge_and_erase(capsys: pytest.CaptureFixture[str], local_service: LocalService) -> None:
    org_id, admin_id, admin_token = local_service.user(role="admin")
    code, member, _ = _cli(
        capsys, local_service, local_service.admin_token, "users", "create", org_id
    )
    with Client(base_url=local_service.url, token=member["token"]) as c:
        agent = c.create_agent("helper")
        session = c.create_session(agent.id, model=None)
        c.post_turn(session.id, [{"role": "user", "content": "Call me Sam."}])
        thread = c.create_thread(agent.id)
        c.save_messages(thread.id, [{"role": "user", "content": "Hello"}])
        bot = c.create_bot("notes")
        c.remember_entry(bot.id, "Sam likes tea.", ["drinks"])

    code, purged, _ = _cli(
        capsys, local_service, member["token"], "purge", bot.id, f"from:{member['id']}"
    )
    assert (code, purged) == (0, {"removed": 1})
    code, erased, _ = _cli(capsys, local_service, admin_token, "erase", org_id, member["id"])
    assert code == 0
    assert (erased["sessions"], erased["threads"], erased["messages"]) == (1, 1, 1)
    # The member's own agent went with everything in it.
    assert erased["agents"] == 1
    with Client(base_url=local_service.url, token=member["token"]) as c:
        assert list(c.iter_agents()) == []
        assert c.get_bot_memory(bot.id).entries == []
    # A member may not erase anyone: the service's answer, on stderr, exit 1.
    code, _, err = _cli(capsys, local_service, member["token"], "erase", org_id, admin_id)
    assert code == 1
    assert err.startswith("error: Forbidden"), err


def test_the_console_script_needs_a_url_and_a_token(
    local_service: LocalService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("AGENT_MEMORY_URL", raising=False)
    monkeypatch.delenv("AGENT_MEMORY_TOKEN", raising=False)
    assert main(["orgs", "create", "x"]) == 2
    assert "AGENT_MEMORY_URL" in capsys.readouterr().err
    # The installed entry point, with the environment a shell would give it.
    env = {**os.environ, "AGENT_MEMORY_URL": local_service.url, "AGENT_MEMORY_TOKEN": "amk_wrong"}
    script = Path(sys.executable).parent / "agent-memory"  # the console script pip made
    run = subprocess.run(
        [str(script), "settings", "get", "o"], env=env, capture_output=True, text=True, check=False
    )
    assert (run.returncode, run.stderr.split(":")[:2]) == (1, ["error", " Unauthorized"])


def test_a_platform_sets_up_its_key_and_people(
    capsys: pytest.CaptureFixture[str], local_service: LocalService
) -> None:
    admin = local_service.admin_token
    _code, org, _ = _cli(capsys, local_service, admin, "orgs", "create", "Platform")
    code, key, _ = _cli(capsys, local_service, admin, "service-keys", "create", org["id"], "web")
    assert code == 0
    assert key["key"].startswith("amsk_")
    code, listed, _ = _cli(capsys, local_service, admin, "service-keys", "list", org["id"])
    assert [k["id"] for k in listed["serviceKeys"]] == [key["id"]]
    for person in ("ana", "ben"):
        code, added, _ = _cli(
            capsys, local_service, key["key"], "users", "add", org["id"], "--id", person
        )
        assert (code, added["id"]) == (0, person)
    code, people, _ = _cli(capsys, local_service, key["key"], "users", "list", org["id"])
    assert [p["id"] for p in people["users"]] == ["ana", "ben"]
    code, erased, _ = _cli(capsys, local_service, key["key"], "users", "delete", org["id"], "ana")
    assert (code, erased["userId"]) == (0, "ana")
    code, revoked, _ = _cli(
        capsys, local_service, admin, "service-keys", "revoke", org["id"], key["id"]
    )
    assert (code, revoked) == (0, {"ok": True})
    code, _, err = _cli(capsys, local_service, key["key"], "users", "list", org["id"])
    assert code == 1
    assert "Unauthorized" in err


def test_an_operator_renames_people_provisions_on_sight_and_deletes_an_organization(
    capsys: pytest.CaptureFixture[str], local_service: LocalService
) -> None:
    admin = local_service.admin_token
    _code, org, _ = _cli(capsys, local_service, admin, "orgs", "create", "Going")
    org_id = org["id"]
    code, settings, _ = _cli(
        capsys, local_service, admin, "settings", "set", org_id, "--auto-provision-users", "on"
    )
    assert (code, settings["autoProvisionUsers"]) == (0, True)
    _code, key, _ = _cli(capsys, local_service, admin, "service-keys", "create", org_id, "web")
    # A person first seen through the key is created, then renamed.
    with Client(base_url=local_service.url, token=key["key"], act_as="kim") as kim:
        assert kim.me().id == "kim"
    code, renamed, _ = _cli(capsys, local_service, admin, "users", "rename", org_id, "kim", "Kim")
    assert (code, renamed["id"], renamed["name"]) == (0, "kim", "Kim")
    code, listed, _ = _cli(capsys, local_service, admin, "orgs", "list")
    assert {"id": org_id, "name": "Going", "users": 1} in [
        {k: o[k] for k in ("id", "name", "users")} for o in listed["organizations"]
    ]
    code, deleted, _ = _cli(capsys, local_service, admin, "orgs", "delete", org_id)
    assert code == 0
    assert (deleted["deleted"]["organizations"], deleted["deleted"]["users"]) == (1, 1)
    code, listed, _ = _cli(capsys, local_service, admin, "orgs", "list")
    assert org_id not in [o["id"] for o in listed["organizations"]]
    code, _, err = _cli(capsys, local_service, admin, "orgs", "delete", org_id)
    assert code == 1
    assert "NotFound" in err
