"""Settings from the environment, read once per cold start.

Each field names its environment variable (template.yaml's `Environment`, infra/local). A
blank variable means the default (the template passes `""` for an unset parameter), except
`DEFAULT_MODEL`, where blank means "no default model". `Settings` is a plain pydantic model
validated from the variables by their names (ADR 0092).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field

# Variables whose blank value is a value of its own rather than "unset".
_BLANK_IS_A_VALUE = frozenset({"DEFAULT_MODEL"})


def _blank_is_none(value: Any) -> Any:
    return None if value == "" else value


def _without_trailing_slash(value: str) -> str:
    return value.rstrip("/")


class Settings(BaseModel):
    """The deployment's configuration; built by `load_settings`, or directly in tests."""

    model_config = ConfigDict(frozen=True, validate_by_name=True, validate_by_alias=True)

    table_name: str = Field("agent-memory", validation_alias="TABLE_NAME")
    kms_key_id: str = Field("alias/agent-memory-local", validation_alias="KMS_KEY_ID")
    state_machine_arn: str = Field("", validation_alias="STATE_MACHINE_ARN")
    # Lambda sets AWS_REGION; a local shell usually has AWS_DEFAULT_REGION.
    region: str = Field(
        "us-east-1", validation_alias=AliasChoices("AWS_REGION", "AWS_DEFAULT_REGION")
    )
    # A model is named `provider/model`; `local/rules` needs no network.
    default_model: Annotated[str | None, BeforeValidator(_blank_is_none)] = Field(
        "local/rules", validation_alias="DEFAULT_MODEL"
    )
    # Model list prices for memory bot budgets (JSON: name -> [input, output] micro-USD per
    # million tokens); usage of a model without a price is recorded as unknown.
    model_prices: str = Field("", validation_alias="MODEL_PRICES")
    # The platform's title and observer models (API.md, seed 003); an option's own wins.
    title_model: Annotated[str | None, BeforeValidator(_blank_is_none)] = Field(
        None, validation_alias="TITLE_MODEL"
    )
    observer_model: Annotated[str | None, BeforeValidator(_blank_is_none)] = Field(
        None, validation_alias="OBSERVER_MODEL"
    )
    # Semantic recall (seed 003, API.md "Threads"): the embedding model, named like models
    # (`local/minilm`, `bedrock/amazon.titan-embed-text-v2:0`, `openai/<model>`), and the
    # S3 Vectors bucket and index (blank: the in-process index, kept in MEMORY_DATA_DIR).
    embedding_model: str = Field("local/minilm", validation_alias="EMBEDDING_MODEL")
    vector_bucket: str = Field("", validation_alias="VECTOR_BUCKET")
    vector_index: str = Field("", validation_alias="VECTOR_INDEX")
    # Only the SHA-256 of the admin token is configured, never the token.
    admin_token_sha256: str = Field("", validation_alias="MEMORY_ADMIN_TOKEN_SHA256")
    openai_base_url: Annotated[str, AfterValidator(_without_trailing_slash)] = Field(
        "https://api.openai.com/v1", validation_alias="OPENAI_BASE_URL"
    )
    # The key itself (local runs) wins over the secret that holds it (AWS).
    openai_api_key: str = Field("", repr=False, validation_alias="OPENAI_API_KEY")
    openai_api_key_secret_arn: str = Field("", validation_alias="OPENAI_API_KEY_SECRET_ARN")
    anthropic_api_key: str = Field("", repr=False, validation_alias="ANTHROPIC_API_KEY")
    anthropic_base_url: Annotated[str, AfterValidator(_without_trailing_slash)] = Field(
        "https://api.anthropic.com", validation_alias="ANTHROPIC_BASE_URL"
    )
    # Comma-separated `provider/model` names or `provider/*` patterns; blank: every provider.
    allowed_models: str = Field("", validation_alias="ALLOWED_MODELS")
    memory_text_max_length: int = Field(8000, validation_alias="MEMORY_TEXT_MAX_LENGTH")
    # Seconds a data key may be reused by the caching materials manager.
    key_cache_seconds: float = Field(300.0, validation_alias="KEY_CACHE_SECONDS")
    key_cache_messages: int = Field(100_000, validation_alias="KEY_CACHE_MESSAGES")
    # Requests per minute per token, and model calls per minute per organization; 0: off.
    rate_limit_per_minute: int = Field(1200, ge=0, validation_alias="RATE_LIMIT_PER_MINUTE")
    org_model_calls_per_minute: int = Field(
        600, ge=0, validation_alias="ORG_MODEL_CALLS_PER_MINUTE"
    )
    # Failed bearer-token checks per minute per source address; past them, 429; 0: off.
    auth_failures_per_minute: int = Field(30, ge=0, validation_alias="AUTH_FAILURES_PER_MINUTE")
    # A service key's own requests per minute, beside each person's RATE_LIMIT_PER_MINUTE.
    service_key_requests_per_minute: int = Field(
        60_000, ge=0, validation_alias="SERVICE_KEY_REQUESTS_PER_MINUTE"
    )
    # Run blocking store calls in a worker thread (a local server with many clients);
    # in Lambda one request runs at a time, so the thread hop only costs time.
    offload_blocking_calls: bool = Field(False, validation_alias="OFFLOAD_BLOCKING_CALLS")
    # A person's export is buffered into one answer where the platform caps answers (Lambda:
    # 6 MB, JSON-escaped); past this many bytes it answers 413 instead of a bare 500. 0: streamed.
    export_max_bytes: int = Field(0, ge=0, validation_alias="EXPORT_MAX_BYTES")
    # Single-machine mode (`make run`): where the data lives (blank: `.data/` in the
    # checkout), and the learning runner's worker threads and open-execution bound.
    data_dir: str = Field("", validation_alias="MEMORY_DATA_DIR")
    learning_workers: int = Field(2, ge=1, le=16, validation_alias="MEMORY_LEARNING_WORKERS")
    learning_backlog: int = Field(1000, ge=1, validation_alias="MEMORY_LEARNING_BACKLOG")


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Settings from `env` (default: the process environment), by the variable names above,
    spelled exactly (a field's own name is no variable).

    A malformed value (`MEMORY_TEXT_MAX_LENGTH=lots`) raises pydantic's ValidationError
    naming the variable, so a misconfigured function fails its first request loudly."""
    source = os.environ if env is None else env
    values = {name: value for name, value in source.items() if value or name in _BLANK_IS_A_VALUE}
    return Settings.model_validate(values, by_alias=True, by_name=False)
