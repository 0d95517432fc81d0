"""infra/openapi.json is generated from the app; a stale copy fails the build."""

from __future__ import annotations

import json

from infra.gen_openapi import OPENAPI_PATH, generate


def test_openapi_document_is_fresh() -> None:
    assert OPENAPI_PATH.exists(), "run `make openapi`"
    assert OPENAPI_PATH.read_text() == generate(), "infra/openapi.json is stale: run `make openapi`"


def test_every_route_but_healthz_needs_a_token_in_the_document() -> None:
    document = json.loads(generate())
    assert "/v1/organizations/{orgId}/settings" in document["paths"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            secured = bool(operation.get("security"))
            assert secured == (path != "/healthz"), f"{method.upper()} {path}"
