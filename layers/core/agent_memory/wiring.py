"""The wiring of one process: the adapters it runs on, and every service built once over
them (`Wiring`). A service, and the module that defines it, is imported and built when a
request first needs it: a family's function (api/families.py) builds only what it uses."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from agent_memory.config import Settings
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
from agent_memory.persistence.limits import BatchedCounters, Counters, TableCounters
from agent_memory.persistence.memory_bot import BotSettingsRepository, MemoryBotRepository
from agent_memory.persistence.observations import ObservationRepository
from agent_memory.persistence.sessions import SessionRepository
from agent_memory.persistence.threads import ThreadRepository
from agent_memory.ports import Cipher, Clock, Ids, ModelCatalog, Orchestrator, Store
from agent_memory.ports.vectors import Embedder, VectorIndex

if TYPE_CHECKING:
    from agent_memory.service.agent_memory import AgentMemoryService
    from agent_memory.service.agent_versions import AgentVersionService
    from agent_memory.service.agents import AgentService
    from agent_memory.service.bot_memory import BotMemoryService
    from agent_memory.service.bots import BotService
    from agent_memory.service.capabilities import CapabilitiesService
    from agent_memory.service.erasure import ErasureService
    from agent_memory.service.events import EventService
    from agent_memory.service.identity import IdentityService
    from agent_memory.service.learning import LearningService
    from agent_memory.service.limits import Limiter, RequestLimits
    from agent_memory.service.memory_bot import MemoryBotService
    from agent_memory.service.memory_bot_calls import RequestCalls
    from agent_memory.service.memory_objects import MemoryObjectService
    from agent_memory.service.model_choice import ModelChoice
    from agent_memory.service.observer import Observer
    from agent_memory.service.org_settings import OrgSettingsService
    from agent_memory.service.recall import RecallService
    from agent_memory.service.session_memory import SessionMemoryService
    from agent_memory.service.sessions import SessionAccess, SessionService
    from agent_memory.service.thread_learning import ThreadStep
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


# The in-process index's log in a single-machine deployment's data directory.
VECTORS_FILE = "vectors.log"


class Wiring:
    """Every repository and service of one process (`service.registry.Services`), each
    built once, when first needed."""

    def __init__(self, settings: Settings, adapters: Adapters) -> None:
        self.settings = settings
        self.adapters = adapters
        self.store, self.cipher = adapters.store, adapters.cipher
        self.clock, self.ids = adapters.clock, adapters.ids
        store, cipher = self.store, self.cipher
        # Repositories only hold the store (and cipher): built with the wiring.
        self.identity_repo = IdentityRepository(store)
        self.agent_repo = AgentRepository(store)
        self.thread_repo = ThreadRepository(store, cipher)
        self.agent_memory_repo = AgentMemoryRepository(store, cipher)
        self.executions = ExecutionRepository(store, cipher)
        self.bot_repo = BotRepository(store, cipher)
        self.memory_bot_repo = MemoryBotRepository(store, cipher)

    # -- the door: identity and request limits ---------------------------------------------

    @cached_property
    def identity(self) -> IdentityService:
        from agent_memory.service.identity import IdentityService

        return IdentityService(
            self.identity_repo, self.clock, self.ids, self.settings.admin_token_sha256
        )

    @cached_property
    def limiter(self) -> Limiter:
        from agent_memory.service.limits import Limiter

        # In the table, written in batches far below a limit; one Limiter per process.
        counters = self.adapters.counters or BatchedCounters(TableCounters(self.store))
        return Limiter(counters, self.clock)

    @cached_property
    def limits(self) -> RequestLimits:
        from agent_memory.service.limits import RequestLimits

        settings = self.settings
        return RequestLimits(
            self.limiter,
            settings.rate_limit_per_minute,
            settings.auth_failures_per_minute,
            settings.service_key_requests_per_minute,
        )

    # -- models ------------------------------------------------------------------------------

    @cached_property
    def models(self) -> ModelCatalog:
        from agent_memory.adapters.choice import model_catalog

        return self.adapters.models or model_catalog(self.settings)

    @cached_property
    def model_choice(self) -> ModelChoice:
        """The one check of a model a person names: allowed (`ALLOWED_MODELS`), and runnable
        here."""
        from agent_memory.service.model_choice import ModelChoice

        return ModelChoice(ModelPolicy.from_setting(self.settings.allowed_models), self.models)

    @cached_property
    def org_settings(self) -> OrgSettingsService:
        from agent_memory.service.org_settings import OrgSettingsService

        return OrgSettingsService(self.identity_repo, self.model_choice)

    @cached_property
    def capabilities(self) -> CapabilitiesService:
        from agent_memory.service.capabilities import CapabilitiesService

        return CapabilitiesService(
            self.model_choice,
            self.org_settings,
            default_model=self.settings.default_model,
            embedder=self.recall.embedder,
        )

    # -- learning --------------------------------------------------------------------------

    @cached_property
    def learning(self) -> LearningService:
        from agent_memory.service.learning import LearningService
        from agent_memory.service.limits import ModelCallQuota
        from agent_memory.wiring_pools import pool_builders

        return LearningService(
            self.store,
            self.executions,
            self.clock,
            self.ids,
            self.adapters.orchestrator,
            self.models,
            quota=ModelCallQuota(self.limiter, self.settings.org_model_calls_per_minute),
            builders=pool_builders(self),
            org_models=lambda org_id: self.org_settings.effective(org_id)["allowedModels"],
        )

    @cached_property
    def thread_steps(self) -> list[ThreadStep]:
        from agent_memory.wiring_pools import thread_steps

        return thread_steps(self)

    # -- semantic recall and the observer ------------------------------------------------

    @cached_property
    def recall(self) -> RecallService:
        """Semantic recall over the deployment's embedder and vector index."""
        from agent_memory.adapters.choice import embedder, vector_index
        from agent_memory.persistence.recall_pending import RecallTails
        from agent_memory.service.recall import RecallService

        adapters = self.adapters
        if adapters.embedder is None:
            adapters.embedder = embedder(self.settings)
        if adapters.vectors is None:
            adapters.vectors = vector_index(self.settings, adapters.embedder, adapters.vectors_file)
        # The user's unindexed tails ranked on the turn (ADR 0084).
        tails = RecallTails(self.store)
        return RecallService(self.thread_repo, adapters.embedder, adapters.vectors, tails)

    @cached_property
    def observer(self) -> Observer:
        """Observational memory's shared core (the background step and the context's)."""
        from agent_memory.service.observer import Observer

        return Observer(
            self.thread_repo,
            ObservationRepository(self.store, self.cipher),
            self.store,
            self.clock,
            self.models,
            self.settings.observer_model,
        )

    # -- sessions and agents -------------------------------------------------------------------

    @cached_property
    def access(self) -> SessionAccess:
        """Sessions as every session use case loads them (repository, switches, models)."""
        from agent_memory.service.sessions import SessionAccess

        return SessionAccess(
            SessionRepository(self.store, self.cipher),
            self.org_settings,
            self.models,
            allowed=self.model_choice.policy,
        )

    @cached_property
    def agents(self) -> AgentService:
        from agent_memory.service.agents import AgentService

        return AgentService(self.agent_repo, self.clock, self.ids)

    @cached_property
    def sessions(self) -> SessionService:
        from agent_memory.service.agent_learning import AgentLearning
        from agent_memory.service.sessions import SessionService

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
    def session_memory(self) -> SessionMemoryService:
        from agent_memory.service.session_memory import SessionMemoryService

        return SessionMemoryService(
            self.access,
            self.clock,
            max_text_length=self.settings.memory_text_max_length,
            learning=self.learning,
        )

    @cached_property
    def agent_memory(self) -> AgentMemoryService:
        from agent_memory.service.agent_memory import AgentMemoryService

        return AgentMemoryService(
            self.agent_memory_repo,
            self.agent_repo,
            self.access.repo,
            self.clock,
            self.ids,
            max_text_length=self.settings.memory_text_max_length,
            learning=self.learning,
        )

    @cached_property
    def agent_versions(self) -> AgentVersionService:
        from agent_memory.service.agent_versions import AgentVersionService

        return AgentVersionService(
            AgentVersionRepository(self.store, self.cipher),
            self.clock,
            self.model_choice,
            self.org_settings,
        )

    @cached_property
    def memory_objects(self) -> MemoryObjectService:
        from agent_memory.persistence.memory_objects import MemoryObjectRepository
        from agent_memory.service.memory_objects import MemoryObjectService
        from agent_memory.service.recall import MemoryRecall

        semantic = MemoryRecall(self.recall.embedder, self.recall.index)
        return MemoryObjectService(
            MemoryObjectRepository(self.store, self.cipher), self.clock, self.ids, semantic
        )

    # -- bots, chats and threads ---------------------------------------------------------------

    @cached_property
    def bots(self) -> BotService:
        from agent_memory.service.bots import BotService

        return BotService(self.bot_repo, self.clock, self.ids)

    @cached_property
    def bot_memory(self) -> BotMemoryService:
        from agent_memory.service.bot_memory import BotMemoryService

        return BotMemoryService(
            BotMemoryRepository(self.store, self.cipher),
            self.bots,
            self.clock,
            self.ids,
            max_text_length=self.settings.memory_text_max_length,
        )

    @cached_property
    def memory_bot_calls(self) -> RequestCalls:
        """The memory Bot's model, budget and prices, for its requests and its learning."""
        from agent_memory.domain.memory_bot import parse_prices
        from agent_memory.service.memory_bot_calls import RequestCalls

        return RequestCalls(
            BotSettingsRepository(self.store),
            self.memory_bot_repo,
            self.models,
            self.clock,
            parse_prices(self.settings.model_prices),
        )

    @cached_property
    def memory_bot(self) -> MemoryBotService:
        from agent_memory.service.memory_bot import MemoryBotService

        return MemoryBotService(
            self.bot_memory,
            self.memory_bot_repo,
            self.executions,
            self.org_settings,
            self.memory_bot_calls,
            self.learning,
        )

    @cached_property
    def threads(self) -> ThreadService:
        from agent_memory.service.observer_context import ObserverService
        from agent_memory.service.thread_learning import ThreadBackground
        from agent_memory.service.threads import ThreadService

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
        from agent_memory.service.events import EventService

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
        from agent_memory.service.erasure import ErasureService

        return ErasureService(
            ErasureRepository(self.store),
            self.identity_repo.has_user,
            bot_memory=self.bot_memory,
            vectors=self.recall.index,
            clock=self.clock,
        )
