"""Lambda entry point of the HTTP API: Mangum around the FastAPI app.

What this import costs is a cold start (bench/cold_start.py; tests/api/test_cold_start.py pins
what it imports): the services, boto3 and the Encryption SDK are built on the first request
that needs them (`services`), not here.
"""

from __future__ import annotations

import gc
import os
from typing import TYPE_CHECKING, Any

# Everything this import builds lives as long as the process: the collector's passes over it
# while it is built (about 15 ms CPU of a family's import) find almost nothing to free.
_COLLECTING = gc.isenabled()
gc.disable()

from mangum import Mangum  # noqa: E402

from agent_memory.api import families  # noqa: E402
from agent_memory.api.app import create_app  # noqa: E402
from agent_memory.observability import logger, metrics  # noqa: E402
from agent_memory.process import built_for_good  # noqa: E402

if TYPE_CHECKING:
    from agent_memory.bootstrap import ColdStart
    from agent_memory.service.registry import Services


class _Wiring:
    """bootstrap's `ColdStart`, with bootstrap itself (every service module: about 1.2x a
    bare `import boto3`) imported at the first request that needs services, as boto3 is."""

    def __init__(self) -> None:
        self._cold: ColdStart | None = None

    def _holder(self) -> ColdStart:
        if self._cold is None:
            with built_for_good():
                from agent_memory.bootstrap import services_from_environment

                self._cold = services_from_environment()
        return self._cold

    def __call__(self) -> Services:
        # The first build (boto3, its clients, every service) is ColdStart's, paused as well.
        return self._holder()()

    def use(self, built: Services) -> None:
        self._holder().use(built)

    def reset(self) -> None:
        self._holder().reset()


# Built on the first request that needs them; tests pin theirs with `services.use(...)`.
services = _Wiring()
# One function per route family (template.yaml sets API_FAMILY): it imports only its routers.
# Unset (`make run`, the tests): every route.
FAMILY = os.environ.get("API_FAMILY") or None
app = create_app(services, routers=families.routers(FAMILY) if FAMILY else None)
_asgi = Mangum(app, lifespan="off")
# The import's objects go to the permanent generation, so no later pass walks them either;
# the few hundred cycles it left (about 770 objects) are kept, not collected.
gc.freeze()
if _COLLECTING:
    gc.enable()


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _asgi(event, context)
