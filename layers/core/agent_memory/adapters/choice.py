"""The adapters the settings choose: the model catalog, the embedder and the vector index."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_memory.config import Settings
from agent_memory.domain.model_names import ModelPolicy
from agent_memory.ports import ModelCatalog
from agent_memory.ports.vectors import Embedder, VectorIndex

if TYPE_CHECKING:
    from agent_memory.adapters.secrets import ApiKey


def openai_key(settings: Settings, session: Any = None) -> ApiKey:
    """The OpenAI key: the setting's, or read from Secrets Manager at its first use."""
    from agent_memory.adapters.secrets import ApiKey, SecretReader

    def secrets_client() -> Any:
        import boto3

        return (session or boto3.session.Session(region_name=settings.region)).client(
            "secretsmanager"
        )

    return ApiKey(
        settings.openai_api_key, settings.openai_api_key_secret_arn, SecretReader(secrets_client)
    )


def model_catalog(settings: Settings, session: Any = None, *, bedrock: bool = True) -> ModelCatalog:
    """The learning models this deployment offers; `bedrock`: whether Bedrock runs here."""
    from agent_memory.adapters.models import ModelCatalogImpl

    return ModelCatalogImpl(
        openai_base_url=settings.openai_base_url,
        openai_api_key=openai_key(settings, session),
        region=settings.region,
        anthropic_api_key=settings.anthropic_api_key,
        anthropic_base_url=settings.anthropic_base_url,
        allowed=ModelPolicy.from_setting(settings.allowed_models),
        bedrock=bedrock,
    )


def embedder(settings: Settings) -> Embedder:
    from agent_memory.adapters.embedders import embedder_for

    return embedder_for(
        settings.embedding_model,
        region=settings.region,
        openai_base_url=settings.openai_base_url,
        openai_key=openai_key(settings),
    )


def vector_index(settings: Settings, embedder: Embedder, log_file: Path | None) -> VectorIndex:
    """S3 Vectors when `VECTOR_BUCKET` is set, else the in-process index."""
    if settings.vector_bucket:
        from agent_memory.adapters.s3vectors import S3VectorIndex
        from agent_memory.adapters.s3vectors import default_client as vectors_client

        return S3VectorIndex(
            vectors_client(settings.region), settings.vector_bucket, settings.vector_index
        )
    from agent_memory.adapters.vector_index import InProcessVectorIndex

    return InProcessVectorIndex(embedder.dimension, log_file)
