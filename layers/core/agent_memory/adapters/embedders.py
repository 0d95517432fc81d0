"""The deployment's embedder from its name (`EMBEDDING_MODEL`, named like models).

Building one calls no model: a model that cannot be reached fails the embeddings that need
it, never the start.
"""

from __future__ import annotations

from collections.abc import Callable

from agent_memory.ports.vectors import Embedder, EmbeddingFailure

LOCAL_MINILM = "local/minilm"


def embedder_for(
    name: str,
    *,
    region: str = "us-east-1",
    openai_base_url: str = "https://api.openai.com/v1",
    openai_key: Callable[[], str] = lambda: "",
) -> Embedder:
    """The embedder `name` names; EmbeddingFailure (not retryable) for an unknown one."""
    from agent_memory.adapters.remote_embedders import split_name

    provider, _, rest = name.partition("/")
    model, params = split_name(rest)
    dimensions = int(params["dimensions"]) if params.get("dimensions", "").isdigit() else None
    if name == LOCAL_MINILM:
        from agent_memory.adapters.local_embedder import shared_minilm

        return shared_minilm()
    if provider == "bedrock":
        from agent_memory.adapters.bedrock import default_client
        from agent_memory.adapters.remote_embedders import BedrockEmbedder

        return BedrockEmbedder(model, default_client(region, 10.0), dimensions=dimensions or 1024)
    if provider == "openai" and model:
        from agent_memory.adapters.remote_embedders import OpenAIEmbedder

        return OpenAIEmbedder(model, openai_base_url, openai_key, dimensions=dimensions)
    raise EmbeddingFailure(f"unknown embedding model {name}", retryable=False)
