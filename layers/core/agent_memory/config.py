"""Settings from the environment, read once per cold start."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    table_name: str = "agent-memory"
    kms_key_id: str = "alias/agent-memory-local"
    state_machine_arn: str = ""
    region: str = "us-east-1"
    # A model is named `provider/model`; `local/rules` needs no network.
    default_model: str | None = "local/rules"
    # Only the SHA-256 of the admin token is configured, never the token.
    admin_token_sha256: str = ""
    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: str = Field(default="", repr=False)
    memory_text_max_length: int = 8000
    # Seconds a data key may be reused by the caching materials manager.
    key_cache_seconds: float = 300.0
    key_cache_messages: int = 100_000
    # Run blocking store calls in a worker thread (a local server with many clients);
    # in Lambda one request runs at a time, so the thread hop only costs time.
    offload_blocking_calls: bool = False
    max_body_bytes: int = 1_048_576


def _env_flag(value: str) -> bool:
    return value.strip().lower() in {"1", "true", "yes", "on"}


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from environment variables (names as in template.yaml)."""
    env = os.environ if env is None else env
    values: dict[str, object] = {}
    text = {
        "table_name": "TABLE_NAME",
        "kms_key_id": "KMS_KEY_ID",
        "state_machine_arn": "STATE_MACHINE_ARN",
        "admin_token_sha256": "MEMORY_ADMIN_TOKEN_SHA256",
        "openai_api_key": "OPENAI_API_KEY",
    }
    for name, var in text.items():
        if env.get(var):
            values[name] = env[var]
    if env.get("OPENAI_BASE_URL"):
        values["openai_base_url"] = env["OPENAI_BASE_URL"].rstrip("/")
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        values["region"] = region
    if "DEFAULT_MODEL" in env:
        values["default_model"] = env["DEFAULT_MODEL"] or None
    if env.get("MEMORY_TEXT_MAX_LENGTH"):
        values["memory_text_max_length"] = int(env["MEMORY_TEXT_MAX_LENGTH"])
    if env.get("KEY_CACHE_SECONDS"):
        values["key_cache_seconds"] = float(env["KEY_CACHE_SECONDS"])
    if env.get("OFFLOAD_BLOCKING_CALLS"):
        values["offload_blocking_calls"] = _env_flag(env["OFFLOAD_BLOCKING_CALLS"])
    return Settings.model_validate(values)
