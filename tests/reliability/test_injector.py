"""The fault injector itself, on the store adapter: what the SDK's retry absorbs, what
reaches the service, and why faults are injected per HTTP attempt (`before-send`) rather
than per call (`before-call`)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config

from agent_memory.adapters.dynamodb.store import DynamoStore
from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.ports import Absent, Equals, Put, Update
from tests.reliability import faults as F
from tests.reliability.faults import FaultInjector

# As bootstrap.py. botocore's `max_attempts` counts retries: 1 + 3 = 4 attempts in all.
STANDARD = Config(retries={"mode": "standard", "max_attempts": 3})
ATTEMPTS = 4


@pytest.fixture
def rig(local_aws: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, FaultInjector]:
    """(a DynamoStore whose client retries as the service's do, the injector)."""
    import botocore.endpoint

    from tests.reliability.world import _NoSleep

    session, local = local_aws
    faults = FaultInjector()
    faults.install(session._session)
    monkeypatch.setattr(botocore.endpoint, "time", _NoSleep([]))
    return DynamoStore(session.client("dynamodb", config=STANDARD), local.table_name), faults


def test_a_fault_on_the_first_attempt_is_absorbed_by_the_sdk_retry(rig: Any) -> None:
    store, faults = rig
    armed = faults.arm(F.DDB_THROTTLED_ONCE)
    store.write([Put({"pk": "P", "sk": "A", "n": 1})])
    assert armed.hits == 1
    assert faults.calls == ["dynamodb.PutItem"]
    assert faults.attempts == ["dynamodb.PutItem"] * 2
    assert store.get("P", "A")["n"] == 1


def test_a_fault_on_every_attempt_reaches_the_service_and_writes_nothing(rig: Any) -> None:
    store, faults = rig
    armed = faults.arm(F.DDB_THROTTLED, call=0)
    with pytest.raises(Unavailable):
        store.write([Put({"pk": "P", "sk": "A"}), Put({"pk": "P", "sk": "B"})])
    assert armed.hits == ATTEMPTS
    faults.reset()
    assert store.get("P", "A") is None


def test_a_read_timeout_on_every_attempt_is_unavailable(rig: Any) -> None:
    store, faults = rig
    faults.arm(F.TIMEOUT)
    with pytest.raises(Unavailable):
        store.get("P", "A")
    assert len(faults.attempts) == ATTEMPTS


@pytest.mark.parametrize(
    ("fault", "raised", "index"),
    [
        (F.TX_CONDITION, WriteConflict, 0),
        (F.TX_CONFLICT, WriteConflict, None),
        (F.TX_THROTTLED, Unavailable, None),
    ],
    ids=lambda v: getattr(v, "name", None) or getattr(v, "__name__", str(v)),
)
def test_transaction_cancellations_carry_their_reasons(
    rig: Any, fault: F.Fault, raised: type[Exception], index: int | None
) -> None:
    store, faults = rig
    faults.arm(fault)
    with pytest.raises(raised) as failure:
        store.write([Put({"pk": "P", "sk": "A"}), Put({"pk": "P", "sk": "B"})])
    if index is not None:
        assert failure.value.index == index  # type: ignore[attr-defined]
    faults.reset()
    assert store.get("P", "A") is None


def test_a_lost_transaction_response_is_answered_once_like_dynamodb(rig: Any) -> None:
    """The retry carries the same ClientRequestToken: DynamoDB answers it without applying
    it again. (moto does not; the injector does, for the responses it dropped.)"""
    store, faults = rig
    store.write([Put({"pk": "P", "sk": "META", "rev": 1})])
    faults.reset()
    faults.arm(F.LOST_RESPONSE)
    store.write(
        [
            Update("P", "META", set={"rev": 2}, condition=Equals("rev", 1)),
            Put({"pk": "P", "sk": "ITEM#1"}, Absent()),
        ]
    )
    assert faults.attempts == ["dynamodb.TransactWriteItems"] * 2
    assert store.get("P", "META")["rev"] == 2


def test_a_lost_response_to_a_conditional_single_write_answers_success(rig: Any) -> None:
    """The SDK's retry of an applied write finds its own writer token on the row: the write
    answers success, never a conflict for a change that was made (R3)."""
    store, faults = rig
    faults.arm(F.LOST_RESPONSE)
    store.write([Put({"pk": "P", "sk": "A", "n": 1}, Absent())])
    assert store.get("P", "A")["n"] == 1


def test_a_before_call_answer_is_not_retried_by_the_sdk(local_aws: Any) -> None:
    """Why the injector works per attempt: a response returned from `before-call` skips the
    SDK's retry loop, so a throttle injected there always reaches the service."""
    session, local = local_aws
    seen: list[str] = []

    def throttle(**_: Any) -> Any:
        seen.append("call")
        body = {"Error": {"Code": "ThrottlingException", "Message": "injected"}}
        return AWSResponse("https://injected", 400, {}, None), body

    session._session.register("before-call.dynamodb.GetItem", throttle)
    store = DynamoStore(session.client("dynamodb", config=STANDARD), local.table_name)
    with pytest.raises(Unavailable):
        store.get("P", "A")
    assert seen == ["call"]
