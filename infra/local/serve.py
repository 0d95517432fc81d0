"""`make run`: the API and its learning runner in one process, on loopback, keeping
everything in a data directory so that a restart (or a crash) finds it all again.

- `MEMORY_DATA_DIR` (default `.data/` in the checkout; created owner-only): the table
  (`memory.sqlite3`, SQLite), the content key (`content.key`) and, unless
  `MEMORY_ADMIN_TOKEN` is set, the admin token (`admin-token`, generated at the first start
  and printed that once; every start prints its path). One server at a time per directory.
- Learning runs in this process on the checked-in state machine (infra/local/runner.py);
  executions left unfinished by a stop or a crash are resumed at start.
- No AWS emulator: `make aws-local` runs it for the AWS CLI and `sam local`.

Environment: PORT (default 8080), MEMORY_DATA_DIR, MEMORY_ADMIN_TOKEN (at least 32
characters), DEFAULT_MODEL (default local/rules), OPENAI_BASE_URL / OPENAI_API_KEY,
MEMORY_LEARNING_WORKERS, LOG_LEVEL; for crash tests only, MEMORY_KILL_AT (infra/local/crash.py).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import signal
import stat
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
TOKEN_FILE = "admin-token"
LOCK_FILE = "lock"
MIN_TOKEN_LENGTH = 32


class RefusedToStart(SystemExit):
    """A start that must not go on (a short token, a busy or unsafe data directory)."""

    def __init__(self, message: str) -> None:
        super().__init__(f"agent-memory: {message}")


@dataclass(frozen=True)
class AdminToken:
    value: str
    # Where it is kept (None: it came from MEMORY_ADMIN_TOKEN), and whether this start made it.
    path: Path | None
    created: bool

    def describe(self) -> str:
        if self.path is None:
            return "admin token: $MEMORY_ADMIN_TOKEN"
        if self.created:
            return (
                f"admin token (shown this once; kept in {self.path}): {self.value}\n"
                "  rotate it: delete that file (or set MEMORY_ADMIN_TOKEN) and restart"
            )
        return f"admin token: in {self.path} (owner-only)"


def data_directory(setting: str) -> Path:
    """The data directory (created owner-only); `setting` is MEMORY_DATA_DIR, blank for
    `.data/` in the checkout."""
    path = Path(setting).expanduser() if setting else ROOT / ".data"
    path = path.resolve()
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        if not path.is_dir():
            raise RefusedToStart(f"{path} (MEMORY_DATA_DIR) is not a directory") from None
    return path


def lock(data_dir: Path) -> IO[str]:
    """Hold the data directory for this process (released when it exits, however)."""
    handle = (data_dir / LOCK_FILE).open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        handle.close()
        if error.errno in (errno.EAGAIN, errno.EACCES):
            raise RefusedToStart(
                f"another agent-memory server is using {data_dir}; stop it, or set "
                "MEMORY_DATA_DIR to another directory"
            ) from None
        raise
    return handle


def admin_token(data_dir: Path, configured: str | None) -> AdminToken:
    """MEMORY_ADMIN_TOKEN when set (at least 32 characters), else the one kept in the data
    directory, generated at the first start."""
    if configured:
        if len(configured) < MIN_TOKEN_LENGTH:
            raise RefusedToStart(
                f"MEMORY_ADMIN_TOKEN has {len(configured)} characters; it needs at least "
                f"{MIN_TOKEN_LENGTH} (or unset it to have one generated and kept in "
                f"{data_dir / TOKEN_FILE})"
            )
        return AdminToken(configured, None, created=False)
    path = data_dir / TOKEN_FILE
    with contextlib.suppress(FileNotFoundError):
        return AdminToken(_read_token(path), path, created=False)
    token = f"amk_admin_{secrets.token_hex(24)}"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(descriptor, f"{token}\n".encode())
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return AdminToken(token, path, created=True)


def _read_token(path: Path) -> str:
    mode = path.lstat().st_mode
    if not stat.S_ISREG(mode):
        raise RefusedToStart(f"{path} is not a regular file")
    if mode & 0o077:
        raise RefusedToStart(f"{path} may be read by others: chmod 600 it (or delete it)")
    token = path.read_text().strip()
    if len(token) < MIN_TOKEN_LENGTH:
        raise RefusedToStart(f"{path} holds no valid token: delete it to have a new one made")
    return token


def main() -> None:
    import uvicorn

    from agent_memory.adapters.local_orchestrator import LocalOrchestrator
    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import (
        KEY_FILE,
        STORE_FILE,
        build_services,
        local_adapters,
        step_services,
    )
    from agent_memory.config import load_settings
    from agent_memory.domain.identity import hash_token
    from agent_memory_client.asgi import with_mcp
    from infra.local.crash import SETTING, with_kill_point
    from infra.local.deadlines import bounded_requests
    from infra.local.runner import Ticker, learning_workflow, scheduled_ticks

    os.umask(0o077)  # every file this process creates (the table's journal too) is owner-only
    _local_defaults()
    port = int(os.environ.get("PORT", "8080"))
    try:
        protocol = bounded_requests()
    except ValueError as error:
        raise RefusedToStart(str(error)) from None
    settings = load_settings()
    data_dir = data_directory(settings.data_dir)
    held = lock(data_dir)
    token = admin_token(data_dir, os.environ.get("MEMORY_ADMIN_TOKEN"))
    settings = settings.model_copy(update={"admin_token_sha256": hash_token(token.value)})

    _name, definition, tasks = learning_workflow()
    try:
        tasks = with_kill_point(tasks, os.environ.get(SETTING))
    except ValueError as error:
        raise RefusedToStart(str(error)) from None
    adapters = local_adapters(settings, data_dir, workflow=definition, tasks=tasks)
    services = build_services(settings, adapters)
    step_services.use(services)  # the step handlers run on these services
    runner = adapters.orchestrator
    assert isinstance(runner, LocalOrchestrator)
    resumed = runner.run()
    # The template's schedules (the budget tick) run here too, their handlers in process.
    ticker = Ticker(scheduled_ticks())
    ticker.start()
    loose = " (readable by others: chmod 700 it)" if data_dir.stat().st_mode & 0o077 else ""
    print(
        f"agent-memory on http://127.0.0.1:{port}\n"
        f"  data: {data_dir}{loose} ({STORE_FILE}, {KEY_FILE}; MEMORY_DATA_DIR)\n"
        f"  {token.describe()}\n"
        f"  learning: in this process; {resumed} unfinished execution(s) resumed\n"
        f"  default model: {settings.default_model}\n"
        f"  MCP: http://127.0.0.1:{port}/mcp (streamable HTTP, the same bearer tokens)\n"
        "  the AWS emulator (AWS CLI, sam local): make aws-local",
        flush=True,
    )
    # uvicorn shuts down gracefully on a signal, then raises it again: end with status 0.
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, _stopped)
    try:
        # MCP at /mcp beside the API: its tools call the API in process with the caller's token.
        app = named_by_function(with_mcp(create_app(lambda: services)))
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", http=protocol)
    finally:
        ticker.close()
        runner.close()
        close = getattr(adapters.store, "close", None)
        if close is not None:
            close()
        held.close()
        print(f"agent-memory stopped; the data stays in {data_dir}", flush=True)


# The MCP endpoint's own function in the template (its HttpApi event's path).
MCP_PATH, MCP_FUNCTION = "/mcp", "McpFunction"


def family_functions() -> dict[str, str]:
    """The template's function for each API family (its `API_FAMILY`)."""
    from infra.local import aws

    found: dict[str, str] = {}
    for logical_id, resource in aws.template()["Resources"].items():
        variables = resource.get("Properties", {}).get("Environment", {}).get("Variables") or {}
        if "API_FAMILY" in variables:
            found[str(variables["API_FAMILY"])] = logical_id
    return found


def named_by_function(app: Any) -> Any:
    """ASGI middleware: each request's log lines name the function that serves its path in
    AWS (one per API family), as they would there."""
    from agent_memory.api.families import family_of
    from agent_memory.observability import serve_as

    functions = family_functions()

    async def serve(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            path = str(scope.get("path", ""))
            mcp = path == MCP_PATH or path.startswith(f"{MCP_PATH}/")
            serve_as(MCP_FUNCTION if mcp else functions.get(family_of(path).name))
        await app(scope, receive, send)

    return serve


def _local_defaults() -> None:
    """One machine's defaults, unless the environment says otherwise."""
    os.environ.setdefault("DEFAULT_MODEL", "local/rules")
    os.environ.setdefault("OFFLOAD_BLOCKING_CALLS", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", os.environ.get("LOG_LEVEL", "WARNING"))


def _stopped(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


if __name__ == "__main__":
    main()
