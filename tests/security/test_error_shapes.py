"""Error bodies a fuzzer found outside the contract, pinned as plain examples."""

from __future__ import annotations

from tests.conftest import Api


def test_a_body_that_is_not_utf8_json_is_a_validation_error(api: Api) -> None:
    # Starlette reports an undecodable body as HTTPException(400), not as a validation error.
    boss = api.user(api.org(), role="admin")
    answer = api.client.post(
        "/v1/agents",
        content=b"\x1au*B\xd3\xad\xff\xfe",
        headers={**boss.headers, "Content-Type": "application/json"},
    )
    assert answer.status_code == 400
    assert answer.json() == {
        "error": {
            "_tag": "ValidationError",
            "message": answer.json()["error"]["message"],
            "path": [],
        }
    }
