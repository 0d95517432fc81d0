"""The deployment check (`make e2e`, `python -m e2e.suite`) passes against the local service as
an operator runs it, and deletes the organizations it made, also when a step fails: the
admin token's list of organizations is the same before and after."""

from __future__ import annotations

import subprocess
import sys

import pytest

from e2e.suite import Failed, Http, Suite
from tests.clients.conftest import ROOT, LocalService


@pytest.mark.parametrize("mode", [[], ["--platform"]], ids=["tokens", "service-key"])
def test_the_suite_passes_against_the_local_service(
    local_service: LocalService, mode: list[str]
) -> None:
    """With each person's own token, and as a platform: one service key of each
    organization acting for its people (`Act-As`), with the same answers."""
    args = ["--base-url", local_service.url, "--admin-token", local_service.admin_token, *mode]
    http = Http(local_service.url)
    before = Suite(http, local_service.admin_token, "local/rules", wait_s=1).organizations()
    done = subprocess.run(
        [sys.executable, "-m", "e2e.suite", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for step in ("session_memory", "agent_memory", "agent_memories", "bot_memory", "threads"):
        assert f"ok   {step}" in done.stdout
    assert "ok   access" in done.stdout
    assert "ok   clean_up (2 organizations deleted)" in done.stdout
    # Nothing of the run is left: the organizations listed are those listed before.
    assert Suite(http, local_service.admin_token, "local/rules", wait_s=1).organizations() == before


def test_a_failed_step_still_deletes_what_the_run_made(
    local_service: LocalService, capsys: pytest.CaptureFixture[str]
) -> None:
    http = Http(local_service.url)
    suite = Suite(http, local_service.admin_token, "local/rules", wait_s=30)

    def threads() -> None:
        raise Failed("the step broke")

    suite.threads = threads  # type: ignore[method-assign]
    assert suite.run() is False
    out = capsys.readouterr().out
    assert "FAIL threads: Failed: the step broke" in out
    assert "ok   access" not in out  # the run stops at the first failure
    assert "ok   clean_up (2 organizations deleted)" in out
    assert len(suite.made.people) == 3
    listed = suite.organizations()
    for person in suite.made.people:
        # The organization is gone with its people: the token answers as a revoked one, and a
        # second deletion finds nothing of it.
        assert person.org not in listed
        assert http.call("GET", "/v1/me", person.token).status == 401
        path = f"/v1/admin/organizations/{person.org}"
        assert http.call("DELETE", path, local_service.admin_token).status == 404


def test_a_model_the_deployment_refuses_fails_the_setup_and_says_where(
    local_service: LocalService, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = Suite(Http(local_service.url), local_service.admin_token, "openai/none", wait_s=5)
    assert suite.run() is False
    out = capsys.readouterr().out
    assert "FAIL tenants: Failed: PATCH /v1/organizations/" in out
    assert "HTTP 400" in out
    assert "ok   clean_up" in out
