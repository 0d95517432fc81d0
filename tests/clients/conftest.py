"""A real local service for the client tests: `python -m infra.local.serve` (what `make run`
runs) on a free port and a temporary data directory, one per test worker."""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.local_server import free_port, spawn

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class LocalService:
    url: str
    admin_token: str
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def user(self, role: str = "member") -> tuple[str, str, str]:
        """A new organization and a user of it: (organization id, user id, token)."""
        admin = {"Authorization": f"Bearer {self.admin_token}"}
        org = httpx.post(
            f"{self.url}/v1/admin/organizations", json={"name": "clients"}, headers=admin
        )
        assert org.status_code == 201, org.text
        org_id = org.json()["id"]
        user = httpx.post(
            f"{self.url}/v1/admin/users",
            json={"organizationId": org_id, "role": role},
            headers=admin,
        )
        assert user.status_code == 201, user.text
        return org_id, user.json()["id"], user.json()["token"]

    def platform(self, *people: str) -> tuple[str, str]:
        """A new organization, its service key, and `people` added by the key (no tokens):
        (organization id, service key)."""
        from agent_memory_client import Client

        with Client(base_url=self.url, token=self.admin_token) as admin:
            org = admin.create_organization("Platform").id
            key = admin.create_service_key(org, "backend").key
        with Client(base_url=self.url, token=key) as platform:
            for person in people:
                platform.add_user(org, id=person)
        return org, key


def run_example(
    code: str, service: LocalService, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run a documented example as written (in this process: no interpreter start), with
    AGENT_MEMORY_URL and AGENT_MEMORY_TOKEN set as its reader would set them."""
    monkeypatch.setenv("AGENT_MEMORY_URL", service.url)
    monkeypatch.setenv("AGENT_MEMORY_TOKEN", token)
    exec(compile(code, "<example>", "exec"), {"__name__": "__main__"})


def run_readme_example(
    heading: str, service: LocalService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run the one Python example of the client README's section `heading`, as a new
    person of a new organization."""
    text = (ROOT / "clients/python/README.md").read_text()
    section = text[text.index(heading) :]
    [example] = re.findall(r"```python\n(.*?)```", section[: section.index("\n## ", 1)], re.S)
    _org, _user, token = service.user()
    run_example(example, service, token, monkeypatch)


@pytest.fixture(scope="session")
def local_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalService]:
    base = tmp_path_factory.mktemp("local-service")
    port = free_port()
    admin_token = f"amk_admin_{secrets.token_hex(24)}"
    env = {
        "PORT": str(port),
        "MEMORY_DATA_DIR": str(base / "data"),
        "MEMORY_ADMIN_TOKEN": admin_token,
        "DEFAULT_MODEL": "local/rules",
        "LOG_LEVEL": "WARNING",
    }
    log = base / "serve.log"
    proc = spawn(env, log)
    service = LocalService(f"http://127.0.0.1:{port}", admin_token, log)
    deadline = time.monotonic() + 60
    try:
        while True:
            assert proc.poll() is None, f"the service exited:\n{service.output()}"
            try:
                if httpx.get(f"{service.url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"no /healthz:\n{service.output()}"
            time.sleep(0.1)
        yield service
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
