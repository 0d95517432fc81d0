"""HTTP: FastAPI routers, request/response contracts, and the one error mapping."""

from agent_memory.api._cold_start import defer_openapi_models, skip_pydantic_v1_probes

# Before anything imports FastAPI: its OpenAPI models are built when the document is.
defer_openapi_models()
skip_pydantic_v1_probes()
