"""Keep FastAPI from importing `pydantic.v1` (about 70 ms of a cold start) to learn that
none of our models is a pydantic v1 model.

FastAPI 0.163 asks `isinstance(x, pydantic.v1.BaseModel)` for every route annotation and
every response it encodes, importing `pydantic.v1` to do so. When `pydantic.v1` was never
imported, nothing can be an instance of it: the answer is False without the import.
A test (tests/api/test_cold_start.py) fails if a FastAPI upgrade changes this.
"""

from __future__ import annotations

import sys
from typing import Any


def skip_pydantic_v1_probes() -> None:
    from fastapi._compat import shared

    if getattr(shared.is_pydantic_v1_model_class, "_agent_memory", False):
        return
    model_class = shared.is_pydantic_v1_model_class
    model_instance = shared.is_pydantic_v1_model_instance

    def is_v1_model_class(cls: Any) -> bool:
        return "pydantic.v1" in sys.modules and bool(model_class(cls))

    def is_v1_model_instance(obj: Any) -> bool:
        return "pydantic.v1" in sys.modules and bool(model_instance(obj))

    is_v1_model_class._agent_memory = True  # type: ignore[attr-defined]
    shared.is_pydantic_v1_model_class = is_v1_model_class
    shared.is_pydantic_v1_model_instance = is_v1_model_instance
    # Modules that imported the names directly.
    from fastapi import _compat, encoders

    _compat.is_pydantic_v1_model_instance = is_v1_model_instance
    encoders.is_pydantic_v1_model_instance = is_v1_model_instance  # type: ignore[attr-defined]
