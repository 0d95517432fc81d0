"""The wiring of one process: which adapters it runs on, and every repository and service
built once over them (`Wiring`). bootstrap.py picks the adapters and keeps the services."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from agent_memory.config import Settings
from agent_memory.domain.memory_bot import parse_prices
from agent_memory.domain.model_names import ModelPolicy
from agent_memory.persistence.agent_memory import AgentMemoryRepository
from agent_memory.persistence.agent_versions import AgentVersionRepository
from agent_memory.persistence.agents import AgentRepository
from agent_memory.persistence.bot_memory import BotMemoryRepository
from agent_memory.persistence.bots import BotRepository
from agent_memory.persistence.erasure import ErasureRepository
from agent_memory.persistence.events import EventRepository
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.identity import IdentityRepository
from agent_memory.persistence.limits import (
    BatchedCounters,
    Counters,
    TableCounters,
)
from agent_memory.persistence.memory_bot import BotSettingsRepository, MemoryBotRepository
from agent_memory.persistence.observations import ObservationRepository
from agent_memory.persistence.sessions import SessionRepository
from agent_memory.persistence.threads import ThreadRepository
from agent_memory.ports import Cipher, Clock, Ids, ModelCatalog, Orchestrator, Store
from agent_memory.ports.vectors import Embedder, VectorIndex
from agent_memory.service.agent_learning import AgentLearning, AgentLearningPool
from agent_memory.service.agent_memory import AgentMemoryService
from agent_memory.service.agent_versions import AgentVersionService
from agent_memory.service.agents import AgentService
from agent_memory.service.bot_learning import BotLearningPool
from agent_memory.service.bot_memory import BotMemoryService
from agent_memory.service.bots import BotService
from agent_memory.service.capabilities import CapabilitiesService
from agent_memory.service.erasure import ErasureService
from agent_memory.service.events import EventService
from agent_memory.service.identity import IdentityService
from agent_memory.service.learning import LearningService
from agent_memory.service.learning_pools import LearningPool
from agent_memory.service.limits import Limiter, ModelCallQuota, RequestLimits
from agent_memory.service.memory_bot import MemoryBotService
from agent_memory.service.memory_objects import MemoryObjectService
from agent_memory.service.model_choice import ModelChoice
from agent_memory.service.observe_step import ObserveStep
from agent_memory.service.observer import Observer
from agent_memory.service.observer_context import ObserverService
from agent_memory.service.org_settings import OrgSettingsService
from agent_memory.service.recall import MemoryRecall, RecallService
from agent_memory.service.recall_step import RecallStep
from agent_memory.service.registry import Services
from agent_memory.service.session_learning import SessionLearningPool
from agent_memory.service.session_memory import SessionMemoryService
from agent_memory.service.sessions import SessionAccess, SessionService
from agent_memory.service.thread_learning import (
    Carrying,
    ThreadBackground,
    ThreadReader,
    ThreadStep,
)
from agent_memory.service.thread_title import TitleStep
from agent_memory.service.threads import ThreadService


@dataclass
class Adapters:
    store: Store
    cipher: Cipher
    clock: Clock
    ids: Ids
    orchestrator: Orchestrator | None = None
    models: ModelCatalog | None = None
    # Where rate limits count; None: in the table (every process shares it).
    counters: Counters | None = None
    # Semantic recall: built from the settings on first use when not given.
    embedder: Embedder | None = None
    vectors: VectorIndex | None = None
    # A single machine's in-process index keeps its vectors in this file.
    vectors_file: Path | None = None


def model_catalog(settings: Settings, session: Any = None, *, bedrock: bool = True) -> ModelCatalog:
    """The learning models this deployment offers (`provider/model`). A provider's key kept
    in Secrets Manager is read at its first model call (adapters/secrets.py). `bedrock`:
    whether Bedrock's models run here (on AWS they do)."""
    from agent_memory.adapters.models import ModelCatalogImpl
    from agent_memory.adapters.secrets import ApiKey, KeyedCatalog, SecretReader

    def catalog(keys: Mapping[str, str]) -> ModelCatalog:
        return ModelCatalogImpl(
            default_model=settings.default_model,
            openai_base_url=settings.openai_base_url,
            openai_api_key=keys.get("openai", ""),
            region=settings.region,
            anthropic_api_key=settings.anthropic_api_key,
            anthropic_base_url=settings.anthropic_base_url,
            allowed=model_policy(settings),
            bedrock=bedrock,
        )

    def secrets_client() -> Any:
        import boto3

        return (session or boto3.session.Session(region_name=settings.region)).client(
            "secretsmanager"
        )

    secrets = SecretReader(secrets_client)
    return KeyedCatalog(
        catalog,
        {"openai": ApiKey(settings.openai_api_key, settings.openai_api_key_secret_arn, secrets)},
    )


def model_policy(settings: Settings) -> ModelPolicy:
    """The models this deployment allows (`ALLOWED_MODELS`)."""
    return ModelPolicy.from_setting(settings.allowed_models)


# The in-process index's log in a single-machine deployment's data directory.
VECTORS_FILE = "vectors.log"


def _openai_key(settings: Settings) -> Callable[[], str]:
    from agent_memory.adapters.secrets import ApiKey, SecretReader

    def secrets_client() -> Any:
        import boto3

        return boto3.session.Session(region_name=settings.region).client("secretsmanager")

    return ApiKey(
        settings.openai_api_key,
        settings.openai_api_key_secret_arn,
        SecretReader(secrets_client),
    )


class Wiring:
    """Every repository and service of one process, each built once, when first needed."""

    def __init__(self, settings: Settings, adapters: Adapters) -> None:
        self.settings = settings
        self.adapters = adapters
        self.store, self.cipher, self.clock, self.ids = (
            adapters.store,
            adapters.cipher,
            adapters.clock,
            adapters.ids,
        )

    # -- repositories ------------------------------------------------------------------

    @cached_property
    def identity_repo(self) -> IdentityRepository:
        return IdentityRepository(self.store)

    @cached_property
    def thread_repo(self) -> ThreadRepository:
        return ThreadRepository(self.store, self.cipher)

    @cached_property
    def agent_memory_repo(self) -> AgentMemoryRepository:
        return AgentMemoryRepository(self.store, self.cipher)

    @cached_property
    def executions(self) -> ExecutionRepository:
        return ExecutionRepository(self.store, self.cipher)

    # -- models --------------------------------------------------------------------------

    @cached_property
    def models(self) -> ModelCatalog:
        return self.adapters.models or model_catalog(self.settings)

    @cached_property
    def model_choice(self) -> ModelChoice:
        """The one check of a model a person names: allowed, and runnable here."""
        return ModelChoice(model_policy(self.settings), self.models)

    @cached_property
    def org_settings(self) -> OrgSettingsService:
        return OrgSettingsService(self.identity_repo, self.model_choice)

    @cached_property
    def limiter(self) -> Limiter:
        # In the table, written in batches far below a limit; one Limiter per process.
        counters = self.adapters.counters or BatchedCounters(TableCounters(self.store))
        return Limiter(counters, self.clock)

    # -- learning --------------------------------------------------------------------------

    @cached_property
    def learning(self) -> LearningService:
        return LearningService(
            self.store,
            self.cipher,
            self.clock,
            self.ids,
            self.adapters.orchestrator,
            self.models,
            self.learning_pools,
            quota=ModelCallQuota(self.limiter, self.settings.org_model_calls_per_minute),
        )

    @cached_property
    def learning_pools(self) -> list[LearningPool]:
        """The pools durable learning serves, each with its own rules."""
        agent_pool = AgentLearningPool(
            self.agent_memory_repo,
            self.access.repo,
            self.identity_repo,
            self.org_settings,
            self.clock,
        )
        bot_pool = BotLearningPool(
            BotRepository(self.store, self.cipher),
            self.bot_memory,
            self.memory_bot_repo,
            self.org_settings,
            self.models,
            self.clock,
            self.bot_settings,
            prices=parse_prices(self.settings.model_prices),
        )
        session_pool = SessionLearningPool(self.access, self.clock)
        pools: list[LearningPool] = [session_pool, agent_pool, bot_pool]
        return [*pools, *self.thread_steps]

    @cached_property
    def thread_steps(self) -> list[ThreadStep]:
        """Background work after a thread's saves, each a learning pool kind of its own
        (docs/decisions.md, "Thread background work": add a step here)."""
        reader = ThreadReader(self.thread_repo, self.agent_versions, self.clock)
        # semanticRecall: the saved messages' embeddings, batched per save.
        recall = RecallStep(reader, self.recall, self.store)
        return [
            # TITLE_MODEL (API.md); local/rules when it is not set.
            TitleStep(reader, self.store, self.clock, self.settings.title_model),
            # OBSERVER_MODEL (API.md); the options' own models win, local/rules without any.
            # A save the observer runs on embeds in the observer's execution (one, not two).
            Carrying(ObserveStep(reader, self.observer), recall),
            recall,
        ]

    # -- semantic recall and the observer ------------------------------------------------

    @cached_property
    def recall(self) -> RecallService:
        """Semantic recall over the deployment's embedder (`EMBEDDING_MODEL`) and vector
        index (S3 Vectors when `VECTOR_BUCKET` is set, else the in-process one)."""
        adapters, settings = self.adapters, self.settings
        if adapters.embedder is None:
            from agent_memory.adapters.embedders import embedder_for

            adapters.embedder = embedder_for(
                settings.embedding_model,
                region=settings.region,
                openai_base_url=settings.openai_base_url,
                openai_key=_openai_key(settings),
            )
        if adapters.vectors is None:
            adapters.vectors = _vector_index(settings, adapters.embedder, adapters.vectors_file)
        return RecallService(self.thread_repo, adapters.embedder, adapters.vectors)

    @cached_property
    def observer(self) -> Observer:
        """Observational memory's shared core (the background step and the context's)."""
        return Observer(
            self.thread_repo,
            ObservationRepository(self.store, self.cipher),
            self.store,
            self.clock,
            self.models,
            self.settings.observer_model,
        )

    # -- services ----------------------------------------------------------------------------

    @cached_property
    def access(self) -> SessionAccess:
        """Sessions as every session use case loads them (repository, switches, models)."""
        return SessionAccess(
            SessionRepository(self.store, self.cipher),
            self.org_settings,
            self.models,
            allowed=model_policy(self.settings),
        )

    @cached_property
    def agents(self) -> AgentService:
        return AgentService(AgentRepository(self.store), self.clock, self.ids)

    @cached_property
    def bots(self) -> BotService:
        return BotService(BotRepository(self.store, self.cipher), self.clock, self.ids)

    @cached_property
    def bot_memory(self) -> BotMemoryService:
        return BotMemoryService(
            BotMemoryRepository(self.store, self.cipher),
            self.bots,
            self.clock,
            self.ids,
            max_text_length=self.settings.memory_text_max_length,
        )

    @cached_property
    def memory_bot_repo(self) -> MemoryBotRepository:
        return MemoryBotRepository(self.store, self.cipher)

    @cached_property
    def bot_settings(self) -> BotSettingsRepository:
        return BotSettingsRepository(self.store)

    @cached_property
    def agent_versions(self) -> AgentVersionService:
        return AgentVersionService(
            AgentVersionRepository(self.store, self.cipher),
            self.clock,
            self.model_choice,
            self.org_settings,
        )

    @cached_property
    def sessions(self) -> SessionService:
        agent_learning = AgentLearning(
            self.agent_memory_repo,
            self.executions,
            self.access.repo,
            self.org_settings,
            self.models,
            self.clock,
            self.learning,
        )
        return SessionService(
            self.access,
            self.agents,
            self.clock,
            self.ids,
            default_model=self.settings.default_model,
            learning=self.learning,
            agent_learning=agent_learning,
        )

    @cached_property
    def memory_bot(self) -> MemoryBotService:
        return MemoryBotService(
            self.bots,
            self.bot_memory,
            self.memory_bot_repo,
            self.executions,
            self.org_settings,
            self.models,
            self.clock,
            self.learning,
            settings=self.bot_settings,
            prices=parse_prices(self.settings.model_prices),
        )

    @cached_property
    def threads(self) -> ThreadService:
        return ThreadService(
            self.thread_repo,
            self.agent_versions,
            self.clock,
            self.ids,
            background=ThreadBackground(self.learning, self.thread_steps),
            observer=ObserverService(self.observer, learning=self.learning),
            recall=self.recall,
        )

    @cached_property
    def events(self) -> EventService:
        return EventService(
            EventRepository(self.store),
            self.clock,
            self.access,
            self.agents,
            self.bots,
            threads=self.thread_repo,
        )

    @cached_property
    def erasure(self) -> ErasureService:
        return ErasureService(
            ErasureRepository(self.store),
            self.identity_repo.user_org,
            bot_memory=self.bot_memory,
            vectors=self.recall.index,
            clock=self.clock,
        )

    @cached_property
    def capabilities(self) -> CapabilitiesService:
        return CapabilitiesService(
            self.model_choice,
            self.org_settings,
            default_model=self.settings.default_model,
            embedder=self.recall.embedder,
        )

    def services(self) -> Services:
        settings, max_text = self.settings, self.settings.memory_text_max_length
        return Services(
            settings=settings,
            identity=IdentityService(
                self.identity_repo, self.clock, self.ids, settings.admin_token_sha256
            ),
            org_settings=self.org_settings,
            memory_objects=MemoryObjectService.build(
                self.store,
                self.cipher,
                self.clock,
                self.ids,
                semantic=MemoryRecall(self.recall.embedder, self.recall.index),
            ),
            learning=self.learning,
            agents=self.agents,
            sessions=self.sessions,
            session_memory=SessionMemoryService(
                self.access, self.clock, max_text_length=max_text, learning=self.learning
            ),
            agent_memory=AgentMemoryService(
                self.agent_memory_repo,
                AgentRepository(self.store),
                self.access.repo,
                self.clock,
                self.ids,
                max_text_length=max_text,
                learning=self.learning,
            ),
            bots=self.bots,
            bot_memory=self.bot_memory,
            memory_bot=self.memory_bot,
            agent_versions=self.agent_versions,
            threads=self.threads,
            events=self.events,
            limits=RequestLimits(
                self.limiter, settings.rate_limit_per_minute, settings.auth_failures_per_minute
            ),
            erasure=self.erasure,
            capabilities=self.capabilities,
        )


def _vector_index(settings: Settings, embedder: Embedder, log_file: Path | None) -> VectorIndex:
    if settings.vector_bucket:
        from agent_memory.adapters.s3vectors import S3VectorIndex
        from agent_memory.adapters.s3vectors import default_client as vectors_client

        return S3VectorIndex(
            vectors_client(settings.region), settings.vector_bucket, settings.vector_index
        )
    from agent_memory.adapters.vector_index import InProcessVectorIndex

    return InProcessVectorIndex(embedder.dimension, log_file)
