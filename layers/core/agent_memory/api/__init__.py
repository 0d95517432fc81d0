"""HTTP: FastAPI routers, request/response contracts, and the one error mapping."""
