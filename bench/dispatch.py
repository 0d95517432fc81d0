"""The local Lambda dispatch, counted: each task the embedded Step Functions starts runs its
handler in this process."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def dispatch_hook(counter: list[int]) -> Callable[[str, dict[str, Any]], Any]:
    """A hook for `infra.local.aws` that runs a function's handler and adds one to `counter`."""
    from infra.local import aws

    handlers = {}
    for logical_id, dotted in aws.lambda_handlers().items():
        module_name, _, attribute = dotted.rpartition(".")
        handlers[logical_id] = getattr(importlib.import_module(module_name), attribute)

    def hook(logical_id: str, event: dict[str, Any]) -> Any:
        counter[0] += 1
        return handlers[logical_id](event, aws.LambdaContext(logical_id))

    return hook
