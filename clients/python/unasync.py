"""Write agent_memory_client/_sync_client.py from _async_client.py (one surface, two
flavours): `python clients/python/unasync.py`; `--check` exits 1 when the file is stale."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "agent_memory_client"
SOURCE = HERE / "_async_client.py"
TARGET = HERE / "_sync_client.py"

HEADER = '''"""Client: every route of the agent-memory API, typed (API.md).

GENERATED from `_async_client.py` by `python clients/python/unasync.py`: do not edit.
"""
'''
# Order matters: longer names first.
REPLACEMENTS = [
    ("AsyncIterator, Callable", "Callable, Iterator"),
    ("for obj in page.data:\n                yield obj", "yield from page.data"),
    ("for thread in page.threads:\n                yield thread", "yield from page.threads"),
    ("for bot in page.bots:\n                yield bot", "yield from page.bots"),
    ("for channel in page.channels:\n                yield channel", "yield from page.channels"),
    ("for chat in page.chats:\n                yield chat", "yield from page.chats"),
    ("for change in page:\n                yield change", "yield from page"),
    ("httpx.AsyncBaseTransport", "httpx.BaseTransport"),
    ("httpx.AsyncClient", "httpx.Client"),
    ("AsyncIterator", "Iterator"),
    ("AsyncClient", "Client"),
    ("async def ", "def "),
    ("async with ", "with "),
    ("async for ", "for "),
    ("await ", ""),
    ("__aenter__", "__enter__"),
    ("__aexit__", "__exit__"),
    ("aclose", "close"),
    ("aiter_lines", "iter_lines"),
    ("aread()", "read()"),
    ("asyncio.sleep", "time.sleep"),
    ("import asyncio", "import time"),
]


def render() -> str:
    text = SOURCE.read_text()
    body = re.sub(r'\A""".*?"""\n', "", text, count=1, flags=re.DOTALL)
    for old, new in REPLACEMENTS:
        body = body.replace(old, new)
    # Formatted as `ruff format` would (its line joins differ once `await ` is gone).
    formatted = subprocess.run(  # noqa: S603 (our own interpreter and arguments)
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(TARGET), "-"],
        input=HEADER + body,
        capture_output=True,
        text=True,
        check=True,
    )
    return formatted.stdout


def main() -> int:
    wanted = render()
    if "--check" in sys.argv:
        return 0 if TARGET.exists() and TARGET.read_text() == wanted else 1
    TARGET.write_text(wanted)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
