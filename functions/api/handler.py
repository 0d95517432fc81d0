"""Lambda entry point of the HTTP API: Mangum around the FastAPI app."""

from __future__ import annotations

from typing import Any

from mangum import Mangum

from agent_memory.api.app import create_app
from agent_memory.api.observability import logger, metrics
from agent_memory.bootstrap import services_from_environment

app = create_app(services_from_environment())
_asgi = Mangum(app, lifespan="off")


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _asgi(event, context)
