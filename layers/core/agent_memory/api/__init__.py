"""HTTP: FastAPI routers, request/response contracts, and the one error mapping."""

from agent_memory.api._cold_start import skip_pydantic_v1_probes

skip_pydantic_v1_probes()
