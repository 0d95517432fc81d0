"""The deployment check (`make e2e`, `python -m e2e.suite`) passes against the local service as
an operator runs it, and cleans up after itself when a step fails."""

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
    gone = "deleted" if mode else "erased, tokens revoked"
    assert f"ok   clean_up (3 people {gone})" in done.stdout


def test_a_failed_step_still_erases_what_the_run_made(
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
    assert len(suite.made.people) == 3
    for person in suite.made.people:
        # The tokens are revoked, and a second erasure finds nothing left of the person.
        assert http.call("GET", "/v1/me", person.token).status == 401
        path = f"/v1/organizations/{person.org}/users/{person.id}/erase"
        again = http.call("POST", path, local_service.admin_token, {}).expect(200, "erase")
        counts = {k: v for k, v in again.items() if isinstance(v, int)}
        assert set(counts.values()) == {0}, again
    [(ana, agent)] = [(who, path) for who, path in suite.made.owned if "/agents/" in path]
    assert ana.call(http, "GET", agent).status == 401


def test_a_model_the_deployment_refuses_fails_the_setup_and_says_where(
    local_service: LocalService, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = Suite(Http(local_service.url), local_service.admin_token, "openai/none", wait_s=5)
    assert suite.run() is False
    out = capsys.readouterr().out
    assert "FAIL tenants: Failed: PATCH /v1/organizations/" in out
    assert "HTTP 400" in out
    assert "ok   clean_up" in out
