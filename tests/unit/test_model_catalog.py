"""The model catalog: which `provider/model` names this deployment can run."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.adapters.bedrock import BedrockModel
from agent_memory.adapters.http_models import AnthropicModel, OpenAICompatibleModel
from agent_memory.adapters.models import ModelCatalogImpl
from agent_memory.adapters.rules_model import RulesModel
from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.model_names import ModelPolicy, parse_model_name


def test_local_rules_needs_nothing() -> None:
    model = ModelCatalogImpl().resolve("local/rules")
    assert isinstance(model, RulesModel)
    assert model.name == "local/rules"


@pytest.mark.parametrize(
    "name",
    [None, "", "local/gpt", "nope/model", "rules", "openai/", "bedrock", "bedrock/../../etc"],
)
def test_no_name_unknown_names_and_other_local_models_are_no_model(name: str | None) -> None:
    assert ModelCatalogImpl(openai_api_key="sk-x").resolve(name) is None


def test_openai_needs_a_key_for_the_public_endpoint() -> None:
    assert ModelCatalogImpl().resolve("openai/gpt-4o-mini") is None
    model = ModelCatalogImpl(openai_api_key="sk-x").resolve("openai/gpt-4o-mini")
    assert isinstance(model, OpenAICompatibleModel)
    assert model.model == "gpt-4o-mini"
    assert model.name == "openai/gpt-4o-mini"


def test_openai_on_a_local_server_needs_no_key() -> None:
    catalog = ModelCatalogImpl(openai_base_url="http://127.0.0.1:11434/v1")
    model = catalog.resolve("openai/llama3.1:8b")
    assert isinstance(model, OpenAICompatibleModel)
    assert model.model == "llama3.1:8b"


def test_public_url_with_a_trailing_slash_is_still_the_public_one() -> None:
    catalog = ModelCatalogImpl(openai_base_url="https://api.openai.com/v1/")
    assert catalog.resolve("openai/gpt-4o") is None


def test_bedrock_models_share_one_lazily_built_client() -> None:
    built: list[float] = []

    def factory(read_timeout_s: float) -> Any:
        built.append(read_timeout_s)
        return object()

    catalog = ModelCatalogImpl(bedrock_client_factory=factory)
    first = catalog.resolve("bedrock/anthropic.claude-3-5-haiku-20241022-v1:0")
    second = catalog.resolve("bedrock/amazon.nova-lite-v1:0")
    assert isinstance(first, BedrockModel)
    assert isinstance(second, BedrockModel)
    assert first.model_id == "anthropic.claude-3-5-haiku-20241022-v1:0"
    assert built == []  # nothing is built before a model is used
    assert first.runtime(100) is second.runtime(100)
    assert built == [100]
    # A request-path deadline gets its own client (botocore has no per-call timeout).
    assert first.runtime(14.2) is second.runtime(15) is not first.runtime(100)
    assert built == [100, 15]


def test_instances_are_cached_per_name() -> None:
    catalog = ModelCatalogImpl(openai_api_key="sk-x")
    assert catalog.resolve("openai/a") is catalog.resolve("openai/a")
    assert catalog.resolve("openai/a") is not catalog.resolve("openai/b")
    assert catalog.resolve("local/rules") is catalog.resolve("local/rules")


def test_the_key_is_not_in_the_catalogs_repr() -> None:
    assert "sk-secret-123" not in repr(ModelCatalogImpl(openai_api_key="sk-secret-123"))


def test_anthropic_needs_a_key_or_its_own_endpoint() -> None:
    assert ModelCatalogImpl().resolve("anthropic/claude-haiku-4-5") is None
    model = ModelCatalogImpl(anthropic_api_key="sk-ant-x").resolve("anthropic/claude-haiku-4-5")
    assert isinstance(model, AnthropicModel)
    assert (model.model, model.name) == ("claude-haiku-4-5", "anthropic/claude-haiku-4-5")
    proxy = ModelCatalogImpl(anthropic_base_url="http://127.0.0.1:9999")
    assert isinstance(proxy.resolve("anthropic/claude-haiku-4-5"), AnthropicModel)
    assert "sk-ant-x" not in repr(model)


def test_a_model_outside_allowed_models_is_no_model() -> None:
    catalog = ModelCatalogImpl(
        openai_api_key="sk-x", allowed=ModelPolicy.from_setting("local/*, openai/gpt-4o-mini")
    )
    assert isinstance(catalog.resolve("local/rules"), RulesModel)
    assert isinstance(catalog.resolve("openai/gpt-4o-mini"), OpenAICompatibleModel)
    assert catalog.resolve("openai/gpt-4o") is None
    assert catalog.resolve("bedrock/amazon.nova-lite-v1:0") is None


@pytest.mark.parametrize(
    "name",
    [
        "openai/meta-llama/Llama-3.1-8B-Instruct",
        "bedrock/us.anthropic.claude-3-5-haiku-20241022-v1:0",
        "openai/llama3.1:8b",
    ],
)
def test_model_ids_with_slashes_and_colons_are_names(name: str) -> None:
    assert str(parse_model_name(name, ["model"])) == name


@pytest.mark.parametrize(
    "name", ["bedrock/../../etc", "openai/a//b", "openai/./x", "openai/a b", "openai/a\\b"]
)
def test_a_path_like_model_name_is_a_400_naming_the_field(name: str) -> None:
    with pytest.raises(ValidationFailed) as raised:
        parse_model_name(name, ["model"])
    assert raised.value.path == ["model"]


def test_the_deployments_list_allows_only_its_patterns() -> None:
    policy = ModelPolicy.from_setting("local/*,openai/gpt-4o-mini")
    assert policy.allows("openai/gpt-4o-mini")
    assert not policy.allows("openai/gpt-4o")
    assert ModelPolicy().allows("anthropic/claude-haiku-4-5")  # unset: every provider
    with pytest.raises(ValidationFailed):
        ModelPolicy.from_setting("local/*,nope/*")
