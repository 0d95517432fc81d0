"""A reproducible world for fault runs: the real app on the embedded AWS, with a fixed clock,
sequential ids and deterministic token secrets, whose table can be saved and restored.

Every run starts from the same saved table with the same clock and the same next id, on
freshly built adapters (new clients: an empty data-key cache and a full retry quota, as in
a cold Lambda), so two clean runs of a command write the same rows, and a faulted run can be
compared row by row with the state before and with a clean run's state after.

Volatile fields: ciphertexts and event ids. Sealing is randomized (a fresh data key per cold
process, a random IV per message), so a `bytes` attribute is compared by what it opens to: its
encryption context and its sealed payload (the row id and the text). An event id ends in a
random nonce (persistence/events.py), drawn again when the service retries its transaction:
an event row is keyed by what it says (time, type, object), see `_event_key`.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import boto3
from fastapi.testclient import TestClient

from agent_memory.adapters.dynamodb.store import deserialize
from agent_memory.adapters.kms import KmsCipher
from agent_memory.api.app import create_app
from agent_memory.bootstrap import aws_adapters, build_services
from agent_memory.domain.identity import TOKEN_SCHEME, IssuedToken, hash_token
from agent_memory.service.registry import Services
from infra.local.aws import ACCOUNT, DYNAMODB_LOCK, REGION
from tests.conftest import ADMIN_TOKEN
from tests.reliability.faults import FaultInjector
from tests.support.in_memory import FixedClock

SETUP_MS = 1_792_486_800_000
RUN_MS = SETUP_MS + 3_600_000
# A state machine that only passes: turns and Refresh start real executions (StartExecution
# can fail) but learning writes nothing, so a run's rows are the command's rows alone.
NOOP_MACHINE = '{"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": true}}}'

Rows = dict[tuple[str, str], dict[str, Any]]


class CountingIds:
    """`ports.Ids`: time-sortable in tests because the counter only grows."""

    def __init__(self, start: int = 1) -> None:
        self.next = start

    def new(self, prefix: str) -> str:
        value = self.next
        self.next += 1
        return f"{prefix}{value:06d}"


class Tokens:
    """Deterministic token secrets in the real format (patched over `issue_token`)."""

    def __init__(self) -> None:
        self.counter = itertools.count(1)

    def issue(self) -> IssuedToken:
        n = next(self.counter)
        prefix = f"{TOKEN_SCHEME}_{n:012x}"
        secret = f"{prefix}_{n:040x}"
        return IssuedToken(secret=secret, prefix=prefix, digest=hash_token(secret))


@dataclass
class Answer:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


@dataclass
class World:
    session: Any  # the boto3 session the services use (faults injected there)
    local: Any
    settings: Any
    faults: FaultInjector
    tokens: Tokens
    ids: CountingIds = field(default_factory=CountingIds)
    services: Services | None = None
    cipher: Any = None
    saved: Any = None  # moto's items of the table
    saved_ids: int = 1
    saved_tokens: int = 1
    headers: dict[str, dict[str, str]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    _client: TestClient | None = None
    _opened: dict[bytes, Any] = field(default_factory=dict)
    _reader: Any = None
    _clients: ReusedClients | None = None

    # -- wiring ------------------------------------------------------------------------------

    def rebuild(self, clock_ms: int) -> None:
        """Fresh adapters over the same table and key: new DynamoDB and Step Functions
        clients (a full retry quota), and the process's cipher with an empty data-key cache.

        The cipher itself is kept: building one costs a KMS client (~25 ms) and resolves the
        key alias (kms.DescribeKey) once per process; test_kms_cold_start.py covers that.
        So are the boto3 clients, given back with a full retry quota (what a new client
        holds that an old one may have spent): building two cost ~80 ms a run."""
        if self._clients is None:
            self._clients = ReusedClients(self.session)
        self._clients.refill()
        adapters = aws_adapters(self.settings, self._clients)
        if self.cipher is None:
            self.cipher = adapters.cipher
        else:
            ready = self.cipher._ready
            if ready is not None:
                ready[1].cache.clear()
        clock = FixedClock(clock_ms)
        # The orchestrator's name claim is dated by its own clock (bootstrap: the system's).
        adapters.orchestrator._clock = clock
        adapters = replace(adapters, cipher=self.cipher, clock=clock, ids=self.ids)
        self.services = build_services(self.settings, adapters)

    @property
    def client(self) -> TestClient:
        assert self._client is not None
        return self._client

    def call(self, method: str, path: str, who: str, body: Any = None) -> Answer:
        kwargs: dict[str, Any] = {"headers": self.headers[who]}
        if body is not None:
            kwargs["json"] = body
        answer = self.client.request(method, path, **kwargs)
        try:
            payload = answer.json()
        except ValueError:
            payload = answer.text
        return Answer(answer.status_code, payload)

    # -- the table ---------------------------------------------------------------------------

    def _table(self) -> Any:
        return moto_table(self.local.table_name)

    def scan_raw(self) -> list[dict[str, Any]]:
        """A full scan, read from moto's backend (its HTTP serializer is slow, and this runs
        once or twice per fault)."""
        with DYNAMODB_LOCK:
            return [item.to_json()["Attributes"] for item in self._table().all_items()]

    def rows(self) -> Rows:
        """Every row of the table, ciphertexts replaced by what they open to. Rate counters
        (`RATE#`) are left out: a request counts against its token's limit whether or not it
        succeeds, and a counter is not stored data that a failure must leave as it was."""
        rows: Rows = {}
        for item in self.scan_raw():
            row = {name: self._comparable(value) for name, value in deserialize(item).items()}
            if str(row["pk"]).startswith("RATE#"):
                continue
            if row.get("type") == "event":
                row["sk"] = _event_key(row, rows)
            rows[(row["pk"], row["sk"])] = row
        return rows

    def _comparable(self, value: Any) -> Any:
        if isinstance(value, bytes):
            if value not in self._opened:
                self._opened[value] = self._open(value)
            return self._opened[value]
        if isinstance(value, dict):
            return {k: self._comparable(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._comparable(v) for v in value]
        return value

    def _open(self, blob: bytes) -> Any:
        if self._reader is None:
            # A session of its own: moto answers it, no fault reaches it.
            clean = boto3.session.Session(region_name=REGION)
            self._reader = KmsCipher(self.local.key_arn, botocore_session=clean._session)
        client, cmm, _suite = self._reader._materials()
        payload, header = client.decrypt(source=blob, materials_manager=cmm)
        return ("sealed", dict(header.encryption_context), payload.decode())

    def save(self) -> None:
        """Remember the table and the counters: every run starts from here."""
        self.saved = snapshot(self.local.table_name)
        self.saved_ids = self.ids.next
        self.saved_tokens = next(self.tokens.counter)

    def restore(self) -> None:
        """The saved table, the saved counters, no fault armed, fresh adapters."""
        put_back(self.local.table_name, self.saved)
        self.rewind()
        self.faults.reset()
        self.rebuild(RUN_MS)

    def rewind(self) -> None:
        """The next ids and token secrets are again those of the saved state."""
        self.ids.next = self.saved_ids
        self.tokens.counter = itertools.count(self.saved_tokens)

    # -- identities ----------------------------------------------------------------------------

    def add_org(self, name: str) -> str:
        answer = self.call("POST", "/v1/admin/organizations", "admin", {"name": name})
        assert answer.status == 201, answer
        return str(answer.body["id"])

    def add_user(self, org_id: str, who: str, role: str = "member") -> str:
        body = {"organizationId": org_id, "role": role}
        answer = self.call("POST", "/v1/admin/users", "admin", body)
        assert answer.status == 201, answer
        self.headers[who] = {"Authorization": f"Bearer {answer.body['token']}"}
        self.refs[f"{who}_id"] = answer.body["id"]
        self.refs[f"{who}_tokenPrefix"] = answer.body["tokenPrefix"]
        return str(answer.body["id"])


class ReusedClients:
    """A boto3 session whose `client` builds each client once and then hands back the same
    one; `refill` gives every client built a full retry quota again (standard mode's token
    bucket, the only state a client carries from one request to the next here: moto
    answers before any connection is made)."""

    def __init__(self, session: Any) -> None:
        self._session = session._session  # the botocore session (KmsCipher, the injector)
        self._boto3 = session
        self._clients: dict[str, Any] = {}
        self._quotas: list[Any] = []

    def client(self, service: str, **kwargs: Any) -> Any:
        if service not in self._clients:
            from botocore.retries import quota

            made: list[Any] = []
            real = quota.RetryQuota

            class Recorded(real):  # type: ignore[misc, valid-type]
                def __init__(self, *args: Any, **inner: Any) -> None:
                    super().__init__(*args, **inner)
                    made.append(self)

            quota.RetryQuota = Recorded
            try:
                self._clients[service] = self._boto3.client(service, **kwargs)
            finally:
                quota.RetryQuota = real
            assert len(made) == 1, f"{service}: {len(made)} retry quotas (standard mode?)"
            self._quotas.extend(made)
        return self._clients[service]

    def refill(self) -> None:
        for bucket in self._quotas:
            bucket._available_capacity = bucket._max_capacity

    def __getattr__(self, name: str) -> Any:
        return getattr(self._boto3, name)


def moto_table(name: str) -> Any:
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[ACCOUNT][REGION].get_table(name)


def snapshot(table_name: str) -> Any:
    """Every item of the table, as moto holds them (a copy)."""
    with DYNAMODB_LOCK:
        return copy.deepcopy(moto_table(table_name).items)


def put_back(table_name: str, saved: Any) -> None:
    """The table as it was at `snapshot` (moto copies every table in each transaction, for
    its rollback: a small table keeps a run's transactions cheap)."""
    with DYNAMODB_LOCK:
        moto_table(table_name).items = copy.deepcopy(saved)


@contextmanager
def reproducible_world(local_aws: Any, settings: Any, monkeypatch: Any) -> Iterator[World]:
    """A World whose services run through a FaultInjector, with learning starting a
    pass-through state machine; the app is served by a TestClient."""
    import botocore.endpoint

    session, local = local_aws
    faults = FaultInjector()
    faults.install(session._session)
    # The SDK's backoff between attempts is real time: record it instead of sleeping.
    sleeps: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", _NoSleep(sleeps))
    machine = session.client("stepfunctions").create_state_machine(
        name="reliability-noop",
        definition=NOOP_MACHINE,
        roleArn="arn:aws:iam::123456789012:role/reliability",
    )["stateMachineArn"]
    tokens = Tokens()
    monkeypatch.setattr("agent_memory.service.identity.issue_token", tokens.issue)
    # Every fault is logged with its traceback by the SDK and the API: hundreds of them.
    for name in ("aws_encryption_sdk", "agent_memory", "agent-memory"):
        monkeypatch.setattr(logging.getLogger(name), "disabled", True)
    world = World(
        session=session,
        local=local,
        settings=settings.model_copy(update={"state_machine_arn": machine}),
        faults=faults,
        tokens=tokens,
    )
    world.headers["admin"] = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    world.rebuild(SETUP_MS)

    def provider() -> Services:
        assert world.services is not None
        return world.services

    with TestClient(create_app(provider), raise_server_exceptions=False) as client:
        world._client = client
        yield world


def _event_key(row: dict[str, Any], rows: Rows) -> str:
    """An event row's sort key without its nonce: `EVT#<at> <type> <object ids>`, then `#n`
    for the n-th event saying the same (the same change told twice is two rows)."""
    ids = json.dumps(row["object"], sort_keys=True)
    said = f"EVT#{int(row['at']):013d} {row['eventType']} {ids}"
    n = 1
    while (row["pk"], f"{said}#{n}") in rows:
        n += 1
    return f"{said}#{n}"


class _NoSleep:
    def __init__(self, sleeps: list[float]) -> None:
        self.sleeps = sleeps

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


Diff = dict[str, list[Any]]


def diff(before: Rows, after: Rows) -> Diff:
    """Rows added, removed and changed (by key), for readable failures."""
    return {
        "added": sorted(k for k in after if k not in before),
        "removed": sorted(k for k in before if k not in after),
        "changed": sorted(k for k in before if k in after and before[k] != after[k]),
    }


Step = Callable[[World], Answer]
