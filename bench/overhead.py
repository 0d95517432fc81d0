"""Overhead of the service over the floor, for GET memory of a 100-entry session.

- service: the deployed Lambda entry point (`functions.api.handler.handler`: Powertools,
  Mangum, FastAPI, auth, access check, the use case) on an API Gateway HTTP API event;
- floor: the same DynamoDB requests (recorded from the service's own call, replayed with a
  plain boto3 client) and the same decrypts done directly with the Encryption SDK (warm
  caching materials manager, as the service's).

Both run in this process on the embedded AWS (moto), alternately, warm, median of REPS.
`service_ms`/`floor_ms`/`ratio` are wall times; `own_*` leave out the time spent inside
moto (identical for both: the same requests), which real AWS replaces by its latency, so
`own_ratio` is the service's code against the floor's code.

    python -m bench.overhead      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from bench.rigs import counted_services, embedded, seed_entries
from bench.timing import median, timed

ENTRIES = 100
REPS = 15


def http_event(method: str, path: str, token: str, body: Any = None) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event, as the deployed ApiFunction receives."""
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {
            "authorization": f"Bearer {token}",
            "content-type": "application/json",
            "host": "api.example.com",
        },
        "requestContext": {
            "http": {
                "method": method,
                "path": path,
                "sourceIp": "127.0.0.1",
                "protocol": "HTTP/1.1",
            },
            "requestId": uuid.uuid4().hex,
            "stage": "$default",
        },
        "body": json.dumps(body) if body is not None else None,
        "isBase64Encoded": False,
    }


class LambdaContext:
    function_name = "ApiFunction"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:ApiFunction"
    aws_request_id = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def _floor_decryptor(env: Any) -> Any:
    """Decrypt with the Encryption SDK directly, configured as the service's cipher."""
    import aws_encryption_sdk
    from aws_encryption_sdk.identifiers import CommitmentPolicy
    from aws_encryption_sdk.key_providers.kms import StrictAwsKmsMasterKeyProvider

    provider = StrictAwsKmsMasterKeyProvider(
        key_ids=[env.local.key_arn], botocore_session=env.root._session
    )
    cmm = aws_encryption_sdk.CachingCryptoMaterialsManager(
        master_key_provider=provider,
        cache=aws_encryption_sdk.LocalCryptoMaterialsCache(capacity=1000),
        max_age=env.settings.key_cache_seconds,
        max_messages_encrypted=env.settings.key_cache_messages,
    )
    client = aws_encryption_sdk.EncryptionSDKClient(
        commitment_policy=CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT
    )

    def decrypt(blob: bytes) -> str:
        payload, _header = client.decrypt(source=blob, materials_manager=cmm)
        return str(json.loads(payload)["text"])

    return decrypt


def _replayer(env: Any, recorded: list[tuple[str, dict[str, Any]]]) -> Any:
    """The recorded DynamoDB requests on a plain client, then every entry decrypted."""
    from botocore import xform_name

    client = env.root.client("dynamodb")
    decrypt = _floor_decryptor(env)
    calls = [(getattr(client, xform_name(op)), params) for op, params in recorded]

    def floor() -> int:
        blobs: list[bytes] = []
        for call, params in calls:
            answer = call(**params)
            blobs += [i["content"]["B"] for i in answer.get("Items", []) if "content" in i]
        for blob in blobs:
            decrypt(blob)
        return len(blobs)

    return floor


def run(reps: int = REPS) -> dict[str, Any]:
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal

    with embedded() as env:
        setup = env.services(learning=False)
        setup.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        user = setup.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        ana = Principal("ana", "bench", "member")
        session_id = setup.sessions.create(ana, setup.agents.create(ana, "Bench").id).id
        seed_entries(setup, env, session_id, 0, ENTRIES)

        os.environ.update(env.environment)
        import functions.api.handler as entry

        services, calls, counting = counted_services(env)
        entry.app.state.services = lambda: services
        event = http_event("GET", f"/v1/sessions/{session_id}/memory", user.token.secret)
        context = LambdaContext()

        def service() -> dict[str, Any]:
            answer: dict[str, Any] = entry.handler(event, context)
            return answer

        for _ in range(2):  # warm: clients, key cache, route compilation
            service()
        calls.record_params = True
        calls.reset()
        counting[0].opens = 0
        answer = service()
        assert answer["statusCode"] == 200, answer
        entries = len(json.loads(answer["body"])["entries"])
        recorded = list(calls.params)
        service_calls = calls.snapshot()
        service_decrypts = counting[0].opens
        calls.record_params = False

        floor = _replayer(env, recorded)
        floor_decrypts = floor()  # warm the floor's key cache
        service_samples, floor_samples = [], []
        for _ in range(reps):
            service_samples.append(timed(service)[1])
            floor_samples.append(timed(floor)[1])

    measured = {"entries": entries, "reps": reps}
    return (
        measured
        | _report(service_samples, floor_samples)
        | {
            "dynamodb_requests": [op for op, _params in recorded],
            "service_calls": service_calls,
            "decrypts": {"service": service_decrypts, "floor": floor_decrypts},
            "note": (
                "wall times include the embedded AWS (moto) answering the same requests for both; "
                "own_* exclude it"
            ),
        }
    )


def _report(service_samples: list[Any], floor_samples: list[Any]) -> dict[str, Any]:
    service_ms = median([s.ms for s in service_samples])
    floor_ms = median([s.ms for s in floor_samples])
    service_own = median([s.own_ms for s in service_samples])
    floor_own = median([s.own_ms for s in floor_samples])
    return {
        "service_ms": service_ms,
        "floor_ms": floor_ms,
        "ratio": round(service_ms / floor_ms, 2) if floor_ms else None,
        "service_own_ms": service_own,
        "floor_own_ms": floor_own,
        "own_ratio": round(service_own / floor_own, 2) if floor_own else None,
        "emulator_ms": median([s.emulator_ms for s in service_samples]),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
