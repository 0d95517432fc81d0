"""A headless Chromium (Debian's `chromium`) driven by Playwright, and the local server
(`make run`'s, on SQLite) on a free port, for tests of the pages the API serves.

`make test` installs Chromium first (`make browser`); without it these tests are skipped
with the reason, never silently.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.local_server import LocalServer
from tests.support.local_server import local_server as serve

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


@pytest.fixture(scope="session")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """`python -m infra.local.serve` (what `make run` starts) with its own data directory."""
    with serve(tmp_path_factory.mktemp("server")) as server:
        yield server


# Module scope: while Playwright's sync API is open its event loop counts as running in the
# main thread, so a session-long browser broke asyncio.run in every later test on the worker.
@pytest.fixture(scope="module")
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
