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
from agent_memory.process import ColdStart  # noqa: E402

if TYPE_CHECKING:
    from agent_memory.service.registry import Services


def _from_environment() -> Services:
    # bootstrap (the wiring, boto3) loads at the first request that needs services.
    from agent_memory.bootstrap import from_environment

    return from_environment()


# Built on the first request that needs them; tests pin theirs with `services.use(...)`.
services = ColdStart(_from_environment)
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
