"""Wiring: adapters into services, once per cold start (cosmicpython's bootstrap)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent_memory.adapters.choice import model_catalog
from agent_memory.config import Settings, load_settings
from agent_memory.process import ColdStart
from agent_memory.service.registry import Services
from agent_memory.wiring import VECTORS_FILE, Adapters, Wiring


def aws_adapters(settings: Settings, session: Any = None) -> Adapters:
    """Adapters over AWS (or the embedded AWS: the endpoint comes from the environment)."""
    import boto3
    from botocore.config import Config

    from agent_memory.adapters.clock import RandomIds, SystemClock
    from agent_memory.adapters.dynamodb.store import DynamoStore
    from agent_memory.adapters.kms import KmsCipher

    session = session or boto3.session.Session(region_name=settings.region)
    config = Config(
        retries={"mode": "standard", "max_attempts": 3},
        connect_timeout=2,
        read_timeout=5,
        max_pool_connections=50,
        # The requests are built by the adapters, never from raw input; DynamoDB and Step
        # Functions validate them anyway. Checking each against the service model costs
        # ~0.3 ms of CPU per call, billed at a full vCPU's rate below 1,769 MB.
        parameter_validation=False,
    )
    dynamodb = session.client("dynamodb", config=config)
    store = DynamoStore(dynamodb, settings.table_name)
    orchestrator = None
    if settings.state_machine_arn:
        from agent_memory.adapters.stepfunctions import StepFunctionsOrchestrator

        stepfunctions = session.client("stepfunctions", config=config)
        # Express runs a repeated name again: the adapter claims names in the table.
        orchestrator = StepFunctionsOrchestrator(
            stepfunctions, settings.state_machine_arn, claims=store, clock=SystemClock()
        )
    return Adapters(
        store=store,
        cipher=KmsCipher(
            settings.kms_key_id,
            botocore_session=session._session,
            cache_seconds=settings.key_cache_seconds,
            cache_messages=settings.key_cache_messages,
        ),
        clock=SystemClock(),
        ids=RandomIds(),
        orchestrator=orchestrator,
        models=model_catalog(settings, session),
    )


# The files of a single-machine deployment, in its data directory (`MEMORY_DATA_DIR`).
STORE_FILE = "memory.sqlite3"
KEY_FILE = "content.key"


def local_adapters(
    settings: Settings,
    data_dir: Path,
    *,
    workflow: Mapping[str, Any] | None = None,
    tasks: Mapping[str, Callable[[dict[str, Any]], Any]] | None = None,
) -> Adapters:
    """Adapters for one machine (`make run`): the table in `data_dir`'s SQLite file,
    content sealed under its key file, and, given a state machine definition and the
    callables of its Task resources, the durable local runner (it works once its `run()`
    is called, after the services it calls are built)."""
    from agent_memory.adapters.clock import RandomIds, SystemClock
    from agent_memory.adapters.local_cipher import LocalCipher
    from agent_memory.adapters.local_orchestrator import LocalOrchestrator
    from agent_memory.adapters.models import aws_credentials_found
    from agent_memory.adapters.sqlite_store import SqliteStore
    from agent_memory.persistence.limits import ProcessCounters

    store = SqliteStore(data_dir / STORE_FILE)
    orchestrator = None
    if workflow is not None:
        orchestrator = LocalOrchestrator(
            store,
            workflow,
            tasks or {},
            workers=settings.learning_workers,
            backlog=settings.learning_backlog,
        )
    return Adapters(
        store=store,
        cipher=LocalCipher(
            data_dir / KEY_FILE,
            cache_seconds=settings.key_cache_seconds,
            cache_messages=settings.key_cache_messages,
        ),
        clock=SystemClock(),
        ids=RandomIds(),
        orchestrator=orchestrator,
        # Bedrock only with AWS credentials at hand (docs/adr/0020).
        models=model_catalog(settings, bedrock=aws_credentials_found()),
        # One process serves this data directory: its counts are exact without the table.
        counters=ProcessCounters(),
        vectors_file=data_dir / VECTORS_FILE,
    )


def build_services(settings: Settings, adapters: Adapters) -> Services:
    """The services of one process, each built once, when first needed."""
    return Wiring(settings, adapters)


def from_environment() -> Services:
    """The services of the deployment the environment describes (on AWS)."""
    settings = load_settings()
    return build_services(settings, aws_adapters(settings))


step_services = ColdStart(from_environment)
