"""Wiring: adapters into services, once per cold start (cosmicpython's bootstrap)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_memory.config import Settings, load_settings
from agent_memory.persistence.identity import IdentityRepository
from agent_memory.ports import Cipher, Clock, Ids, Orchestrator, Store
from agent_memory.service.agent_memories import AgentMemoriesService
from agent_memory.service.identity import IdentityService
from agent_memory.service.org_settings import OrgSettingsService
from agent_memory.service.registry import Services


@dataclass
class Adapters:
    store: Store
    cipher: Cipher
    clock: Clock
    ids: Ids
    orchestrator: Orchestrator | None = None


def aws_adapters(settings: Settings, session: Any = None) -> Adapters:
    """Adapters over AWS (or the embedded AWS: the endpoint comes from the environment)."""
    import boto3
    from botocore.config import Config

    from agent_memory.adapters.clock import RandomIds, SystemClock
    from agent_memory.adapters.dynamodb import DynamoStore
    from agent_memory.adapters.kms import KmsCipher

    session = session or boto3.session.Session(region_name=settings.region)
    config = Config(
        retries={"mode": "standard", "max_attempts": 3},
        connect_timeout=2,
        read_timeout=5,
        max_pool_connections=50,
    )
    dynamodb = session.client("dynamodb", config=config)
    return Adapters(
        store=DynamoStore(dynamodb, settings.table_name),
        cipher=KmsCipher(
            settings.kms_key_id,
            botocore_session=session._session,
            cache_seconds=settings.key_cache_seconds,
            cache_messages=settings.key_cache_messages,
        ),
        clock=SystemClock(),
        ids=RandomIds(),
    )


def build_services(settings: Settings, adapters: Adapters) -> Services:
    identity_repo = IdentityRepository(adapters.store)
    return Services(
        settings=settings,
        identity=IdentityService(
            identity_repo, adapters.clock, adapters.ids, settings.admin_token_sha256
        ),
        org_settings=OrgSettingsService(identity_repo),
        agent_memories=AgentMemoriesService.build(
            adapters.store, adapters.cipher, adapters.clock, adapters.ids
        ),
    )


def lazy(factory: Callable[[], Services]) -> Callable[[], Services]:
    """Build on first call, then return the same Services (thread-safe)."""
    built: list[Services] = []
    lock = threading.Lock()

    def get() -> Services:
        if not built:
            with lock:
                if not built:
                    built.append(factory())
        return built[0]

    return get


def services_from_environment() -> Callable[[], Services]:
    def factory() -> Services:
        settings = load_settings()
        return build_services(settings, aws_adapters(settings))

    return lazy(factory)
