"""Write the OpenAPI document generated from the app to infra/openapi.json (`make openapi`).

A test compares the checked-in file with a fresh generation, so CI fails when it is stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OPENAPI_PATH = Path(__file__).resolve().parent / "openapi.json"


def _no_services() -> Any:
    raise RuntimeError("the OpenAPI document is generated without serving requests")


def generate() -> str:
    from agent_memory.api.app import create_app

    document = create_app(_no_services, deployment_document=False).openapi()
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def main() -> None:
    OPENAPI_PATH.write_text(generate())
    print(f"wrote {OPENAPI_PATH}")


if __name__ == "__main__":
    main()
