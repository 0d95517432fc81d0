"""The model catalog: `provider/model` names to models (API.md, "Models").

A name that does not resolve (unknown provider, no key for a public endpoint, Bedrock off,
outside `ALLOWED_MODELS`) is None, "no model". Instances are cached per name for warm reuse.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from agent_memory.adapters.bedrock import BedrockClients, BedrockModel, default_client
from agent_memory.adapters.http_models import (
    ANTHROPIC_BASE_URL,
    OPENAI_BASE_URL,
    AnthropicModel,
    ApiKeySource,
    OpenAICompatibleModel,
)
from agent_memory.adapters.rules_model import NAME as RULES_NAME
from agent_memory.adapters.rules_model import RulesModel
from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.model_name_bounds import PROVIDERS
from agent_memory.domain.model_names import ModelPolicy, parse_model_name
from agent_memory.ports.models import LearningModel


class ModelCatalogImpl:
    def __init__(
        self,
        openai_base_url: str = OPENAI_BASE_URL,
        openai_api_key: ApiKeySource = "",
        bedrock_client_factory: Callable[[float], Any] | None = None,
        region: str = "us-east-1",
        *,
        anthropic_api_key: str = "",
        anthropic_base_url: str = ANTHROPIC_BASE_URL,
        allowed: ModelPolicy | None = None,
        bedrock: bool = True,
    ) -> None:
        self.allowed = allowed or ModelPolicy()
        self._openai_base_url = openai_base_url.rstrip("/")
        self._openai_api_key = openai_api_key
        self._anthropic_api_key = anthropic_api_key
        self._anthropic_base_url = anthropic_base_url.rstrip("/")
        self._bedrock_on = bedrock
        self._bedrock = BedrockClients(
            bedrock_client_factory or (lambda seconds: default_client(region, seconds))
        )
        self._models: dict[str, LearningModel | None] = {}
        self._lock = threading.Lock()

    def providers(self) -> tuple[str, ...]:
        # OpenAI: a key (or a secret to read it from), or an endpoint that is not the public
        # one (local servers need no key); Anthropic: a key, or a proxy that holds it.
        configured = {
            "local": True,
            "openai": bool(self._openai_api_key) or self._openai_base_url != OPENAI_BASE_URL,
            "bedrock": self._bedrock_on,
            "anthropic": bool(self._anthropic_api_key)
            or self._anthropic_base_url != ANTHROPIC_BASE_URL,
        }
        return tuple(p for p in PROVIDERS if configured.get(p))

    def resolve(self, name: str | None) -> LearningModel | None:
        if not name:
            return None
        with self._lock:
            if name not in self._models:
                self._models[name] = self._build(name)
            return self._models[name]

    def _build(self, name: str) -> LearningModel | None:
        try:
            parsed = parse_model_name(name, ())
        except ValidationFailed:
            return None
        if not self.allowed.allows(name) or parsed.provider not in self.providers():
            return None
        if parsed.provider == "local":
            return RulesModel() if name == RULES_NAME else None
        if parsed.provider == "openai":
            return OpenAICompatibleModel(
                parsed.model, base_url=self._openai_base_url, api_key=self._openai_api_key
            )
        if parsed.provider == "anthropic":
            return AnthropicModel(
                parsed.model, api_key=self._anthropic_api_key, base_url=self._anthropic_base_url
            )
        return BedrockModel(parsed.model, clients=self._bedrock)


def aws_credentials_found() -> bool:
    """Whether AWS credentials are at hand without the instance metadata service."""
    import botocore.session
    from botocore.exceptions import BotoCoreError

    resolver = botocore.session.Session().get_component("credential_provider")
    # The metadata service on a machine that is not an EC2 instance costs a second's timeout.
    resolver.remove("iam-role")
    try:
        return resolver.load_credentials() is not None
    except BotoCoreError:  # a broken profile is "no credentials", not a failed start
        return False
