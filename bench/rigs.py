"""The embedded AWS with the service's settings, seeding, and requests measured cold and warm."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from bench.counting import AwsCalls, CountingCatalog, CountingCipher
from bench.timing import Emulator, scaling_row, served, timed

ADMIN_TOKEN = "amk_admin_bench-token-0123456789"


@dataclass
class Env:
    """A provisioned embedded AWS (in-process moto) and the settings that point at it."""

    root: Any
    local: Any
    settings: Any
    # The environment variables the settings were read from (for code that reads os.environ).
    environment: dict[str, str]

    def services(
        self,
        calls: AwsCalls | None = None,
        *,
        models: Any = None,
        cipher: Callable[[Any], Any] | None = None,
        learning: bool = True,
    ) -> Any:
        """Services on a new boto3 session (a cold start: new clients, a new key cache)."""
        import boto3

        from agent_memory.bootstrap import aws_adapters, build_services
        from infra.local import aws

        session = boto3.session.Session(region_name=aws.REGION)
        if calls is not None:
            calls.install(session._session)
        adapters = aws_adapters(self.settings, session)
        if models is not None:
            adapters = replace(adapters, models=models)
        if cipher is not None:
            adapters = replace(adapters, cipher=cipher(adapters.cipher))
        if not learning:
            adapters = replace(adapters, orchestrator=None)
        return build_services(self.settings, adapters)


@contextmanager
def embedded(default_model: str = "local/rules") -> Iterator[Env]:
    """In-process moto provisioned from template.yaml, and settings for it."""
    import os

    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from agent_memory.config import load_settings
    from agent_memory.domain.identity import hash_token
    from infra.local.aws import embedded_aws, provision

    with embedded_aws() as root:
        local = provision(root)
        environment = {
            **local.environment(),
            "MEMORY_ADMIN_TOKEN_SHA256": hash_token(ADMIN_TOKEN),
            "DEFAULT_MODEL": default_model,
        }
        Emulator.install()
        yield Env(root, local, load_settings(environment), environment)


def seed_entries(services: Any, env: Env, session_id: str, start: int, count: int) -> None:
    """Entries `start..start+count-1`, sealed as the service seals them, written with
    BatchWriteItem (setup only: what is measured is the read that follows)."""
    load_entries(
        services,
        env.root.client("dynamodb"),
        env.settings.table_name,
        session_id,
        range(start, start + count),
        seed=start,
    )


def load_entries(
    services: Any, client: Any, table: str, session_id: str, numbers: range, *, seed: int
) -> None:
    """Facts `fact-<n>` of random length (each with its recency copy), loaded in bulk."""
    from agent_memory.adapters.dynamodb.items import serialize
    from agent_memory.domain.session_memory import fact, item_sources

    repo = services.sessions._repo
    session = repo.get(session_id)
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for n in numbers:
        content = f"Fact {n}: " + "detail " * rng.randrange(2, 30)
        meta = fact(
            f"fact-{n:05d}", "fact", content, item_sources(["i-01"]), 1_700_000_000_000 + n, 1
        )
        for action in repo.entry_put(session, meta, content, None):
            items.append({"PutRequest": {"Item": serialize(action.record)}})
    batch_put(client, table, items)


def batch_put(client: Any, table: str, items: Sequence[dict[str, Any]]) -> None:
    """`PutRequest`s in BatchWriteItem calls of 25, again for what DynamoDB leaves unprocessed."""
    for first in range(0, len(items), 25):
        request: dict[str, Any] = {table: list(items[first : first + 25])}
        while request:
            request = client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}


def bot_fact(
    entry_id: str, person: str, org: str, source: tuple[str, str], content: str, n: int
) -> Any:
    """A memory Bot's fact for `person` from one item (`source`: item id, chat id), as its
    learning would store it, created at the n-th millisecond of the seed."""
    from agent_memory.domain.entries import EntryMeta, ItemSource

    item_id, chat_id = source
    at = 1_700_000_000_000 + n
    return EntryMeta(
        id=entry_id,
        layer="fact",
        kind="fact",
        tags=(f"from:{person}", f"for:person:{person}", f"org:{org}", f"chat:{chat_id}"),
        sources=(ItemSource(item_id, chat_id),),
        created_at=at,
        updated_at=at,
        rev=1,
        length=len(content),
        by="memory_bot",
    )


def _http_report(calls: AwsCalls, cipher: CountingCipher, answer: Any, ms: float) -> dict[str, Any]:
    shot = calls.snapshot()
    report = {
        k: shot[k]
        for k in ("dynamodb", "kms", "by_operation", "items_read", "rru_estimate", "wru_estimate")
    }
    # A request path never calls a model; it may start learning (StartExecution).
    report.update(
        stepfunctions=shot["stepfunctions"], model=0, decrypts=cipher.opens, own_ms=round(ms, 1)
    )
    report["status"] = answer.status_code
    if answer.status_code >= 300:
        report["error"] = answer.text[:300]
    return report


def cold_warm(
    env: Env, token: str, prepare: Callable[[], tuple[str, str, Any]], *, learning: bool = False
) -> dict[str, Any]:
    """One request through the app twice, on cold services then warm: AWS calls, decrypts
    and the time outside the emulator of each (`prepare` gives method, path and body).
    With `learning`, the deployment's workflow is on (its StartExecution calls count)."""
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    calls = AwsCalls()
    ciphers: list[CountingCipher] = []

    def count(cipher: Any) -> CountingCipher:
        ciphers.append(CountingCipher(cipher))
        return ciphers[-1]

    services = env.services(calls, cipher=count, learning=learning)
    report: dict[str, Any] = {}
    with TestClient(served(create_app(lambda: services)), raise_server_exceptions=False) as http:
        for phase in ("cold", "warm"):
            method, path, body = prepare()
            calls.reset()
            ciphers[0].opens = 0
            answer, spent = timed(
                lambda m=method, p=path, b=body: http.request(
                    m, p, json=b, headers={"Authorization": f"Bearer {token}"}
                )
            )
            report[phase] = _http_report(calls, ciphers[0], answer, spent.own_ms)
    return report


@dataclass
class LearningRig:
    """The embedded AWS with the API's services and the learning steps' services, each on
    its own boto3 session with its own `AwsCalls` (what a request costs, what the workflow
    costs); moto's Step Functions runs learning.asl.json and dispatches every Lambda task
    to the step handlers in this process (`tasks[0]` counts them)."""

    root: Any
    local: Any
    settings: Any
    api: Any
    steps: Any
    api_calls: AwsCalls
    step_calls: AwsCalls
    tasks: list[int]
    sfn: Any
    models: Any
    # The step tasks' own time (outside moto), summed, in milliseconds.
    task_ms: list[float]
    # Set: step tasks run when moto dispatches them. Cleared by `held`.
    gate: threading.Event

    @contextmanager
    def held(self) -> Iterator[None]:
        """Step tasks wait while the block runs: a request that starts a run is timed
        without the run's work beside it in this process (on AWS it runs elsewhere), whose
        own time is counted in `task_ms` apart."""
        self.gate.clear()
        try:
            yield
        finally:
            self.gate.set()

    def executions(self) -> list[dict[str, Any]]:
        """Every execution of the learning state machine, once none is running."""
        deadline = time.monotonic() + 60.0
        arn = self.local.state_machine_arn
        while time.monotonic() < deadline:
            listed = self.sfn.list_executions(stateMachineArn=arn)["executions"]
            if all(e["status"] != "RUNNING" for e in listed):
                return list(listed)
            time.sleep(0.05)
        raise RuntimeError("executions still running after 60 s")

    def transitions(self, arn: str) -> int:
        """States entered by one execution (what Step Functions Standard bills)."""
        events = self.sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
        return sum(1 for e in events if str(e["type"]).endswith("StateEntered"))

    def reset(self) -> set[str]:
        """Zero the counters; the executions so far (to tell the next ones apart)."""
        self.api_calls.reset()
        self.step_calls.reset()
        self.tasks[0] = 0
        self.task_ms[0] = 0.0
        return {e["executionArn"] for e in self.executions()}


@contextmanager
def learning_rig(
    models: Any = None, environment: Mapping[str, str] | None = None, **adapters: Any
) -> Iterator[LearningRig]:
    """A `LearningRig` whose services resolve models from `models` (both sides; None: the
    deployment's catalog, counted in `rig.models`), with the settings `environment` adds,
    and any adapter replaced by `adapters` (e.g. an embedder both sides share)."""
    import boto3

    from agent_memory.adapters.choice import model_catalog
    from agent_memory.bootstrap import aws_adapters, build_services, step_services
    from agent_memory.config import load_settings
    from bench.dispatch import dispatch_hook
    from infra.local import aws

    with aws.embedded_aws() as root:
        local = aws.provision(root)
        Emulator.install()  # own time: outside moto
        values = {**local.environment(), "DEFAULT_MODEL": "local/rules", **(environment or {})}
        settings = load_settings(values)
        if models is None:
            models = CountingCatalog(model_catalog(settings))

        def services(calls: AwsCalls) -> Any:
            session = boto3.session.Session(region_name=aws.REGION)
            calls.install(session._session)
            built = replace(aws_adapters(settings, session), models=models, **adapters)
            return build_services(settings, built)

        api_calls, step_calls = AwsCalls(), AwsCalls()
        api, steps = services(api_calls), services(step_calls)
        step_services.use(steps)
        tasks = [0]
        task_ms = [0.0]
        dispatch = dispatch_hook(tasks)

        gate = threading.Event()
        gate.set()

        def hook(logical_id: str, event: dict[str, Any]) -> Any:
            gate.wait(60.0)
            # Each task's own time (outside moto), on the thread moto runs it on.
            result, spent = timed(lambda: dispatch(logical_id, event), this_thread=True)
            task_ms[0] += spent.own_ms
            return result

        remove_hook = aws.add_invoke_hook(hook)
        try:
            yield LearningRig(
                root,
                local,
                settings,
                api,
                steps,
                api_calls,
                step_calls,
                tasks,
                root.client("stepfunctions"),
                models,
                task_ms,
                gate,
            )
        finally:
            remove_hook()
            step_services.reset()


def counted_services(env: Env) -> tuple[Any, AwsCalls, list[CountingCipher]]:
    """Services without learning whose AWS calls and decrypts are counted: (services, the
    calls, the counting cipher they were built with, in a list filled when they are)."""
    calls = AwsCalls()
    ciphers: list[CountingCipher] = []

    def count(cipher: Any) -> CountingCipher:
        ciphers.append(CountingCipher(cipher))
        return ciphers[-1]

    return env.services(calls, cipher=count, learning=False), calls, ciphers


def at_sizes(
    env: Env,
    token: str,
    path: str,
    body: dict[str, Any],
    sizes: Sequence[int],
    grow: Callable[[int, int], None],
    unit: str,
    shown: Callable[[Any], int],
) -> list[dict[str, Any]]:
    """One POST of `body` to `path`, measured warm (time, calls, decrypts) each time
    `grow(have, want)` has brought its data to the next of `sizes`; `shown(answer)` counts
    what it returned."""
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    services, calls, ciphers = counted_services(env)
    headers = {"Authorization": f"Bearer {token}"}
    rows: list[dict[str, Any]] = []
    have = 0
    with TestClient(create_app(lambda: services)) as http:
        for size in sizes:
            grow(have, size)
            have = size
            http.post(path, json=body, headers=headers)  # warm
            calls.reset()
            ciphers[0].opens = 0
            answer, spent = timed(lambda: http.post(path, json=body, headers=headers))
            assert answer.status_code == 200, answer.text
            row = scaling_row(spent, calls.snapshot(), ciphers[0].opens, **{unit: size})
            rows.append(row | shown(answer))
    return rows
