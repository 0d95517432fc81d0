"""What schemathesis found, pinned as plain examples (ADR 0065)."""

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


def test_an_importance_below_the_smallest_number_dynamodb_keeps_is_stored(api: Api) -> None:
    # 2.2e-308 is a valid importance (0..1) but DynamoDB numbers stop at 1e-130: boto3
    # raised decimal.Underflow, a 500.
    boss = api.user(api.org(), role="admin")
    body = {"category": "fact", "content": "0", "importance": 1.1125369292536007e-308}
    answer = api.client.post("/v1/agent_memories", json=body, headers=boss.headers)
    assert answer.status_code == 201, answer.text
    kept = api.client.get(f"/v1/agent_memories/{answer.json()['id']}", headers=boss.headers)
    assert kept.json()["importance"] == 0.0  # kept as 0: DynamoDB has no smaller number
