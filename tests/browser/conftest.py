"""A headless Chromium (Debian's `chromium`) driven by Playwright, and the local server
(`make run`'s, on SQLite) on a free port, for tests of the pages the API serves.

`make test` installs Chromium first (`make browser`); without it these tests are skipped
with the reason, never silently.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ROOT = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "amk_admin_browser-test-token-0123456789abcdef"


@dataclass(frozen=True)
class LocalServer:
    url: str
    admin_token: str


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """`python -m infra.local.serve` (what `make run` starts) with its own data directory."""
    port = _free_port()
    env = os.environ | {
        "PORT": str(port),
        "MEMORY_DATA_DIR": str(tmp_path_factory.mktemp("data")),
        "MEMORY_ADMIN_TOKEN": ADMIN_TOKEN,
        "PYTHONPATH": f"{ROOT / 'layers' / 'core'}{os.pathsep}{ROOT}",
    }
    log = tmp_path_factory.mktemp("log") / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "infra.local.serve"], cwd=ROOT, env=env, stdout=out, stderr=out
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the local server did not start:\n{log.read_text()}")
                time.sleep(0.2)
        yield LocalServer(url, ADMIN_TOKEN)
    finally:
        server.terminate()
        server.wait(timeout=20)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium from Debian's package (no browser download)."""
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: `make browser` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page that records what the page reported and every request it made."""
    context = browser.new_context()
    opened = context.new_page()
    opened.errors = []
    opened.requested = []
    opened.on("pageerror", lambda error: opened.errors.append(str(error)))
    opened.on("request", lambda request: opened.requested.append(request.url))
    try:
        yield opened
    finally:
        context.close()
