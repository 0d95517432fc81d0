"""Keep FastAPI from importing `pydantic.v1` (about 70 ms of a cold start) to learn that
none of our models is a pydantic v1 model; tests/api/test_cold_start.py guards the hooks.
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
    from fastapi import _compat, encoders

    _compat.is_pydantic_v1_model_instance = is_v1_model_instance
    encoders.is_pydantic_v1_model_instance = is_v1_model_instance  # type: ignore[attr-defined]


OPENAPI_MODELS = "fastapi.openapi.models"


def defer_openapi_models() -> None:
    """Build FastAPI's OpenAPI models (a third of its import) at first use: no request needs them.

    While `fastapi.openapi.models` is imported, its classes get pydantic's `defer_build` and
    its own `model_rebuild()` calls are skipped; nothing happens once FastAPI is imported."""
    if OPENAPI_MODELS in sys.modules:
        return
    from pydantic import BaseModel
    from pydantic._internal import _config

    for_model = _config.ConfigWrapper.for_model.__func__  # type: ignore[attr-defined]
    model_rebuild = BaseModel.model_rebuild.__func__  # type: ignore[attr-defined]

    def deferred_config(cls: Any, bases: Any, namespace: dict[str, Any], kwargs: Any) -> Any:
        wrapper = for_model(cls, bases, namespace, kwargs)
        if namespace.get("__module__") == OPENAPI_MODELS:
            wrapper.config_dict["defer_build"] = True
        return wrapper

    def rebuild_later(cls: Any, *args: Any, **kwargs: Any) -> Any:
        # Only the module's own top-level calls: pydantic's first-use build still rebuilds.
        if sys._getframe(1).f_globals.get("__name__") == OPENAPI_MODELS:
            return None
        return model_rebuild(cls, *args, **kwargs)

    _config.ConfigWrapper.for_model = classmethod(deferred_config)  # type: ignore[method-assign,assignment]
    BaseModel.model_rebuild = classmethod(rebuild_later)  # type: ignore[method-assign,assignment]
    try:
        import fastapi.openapi.models  # noqa: F401
    finally:
        _config.ConfigWrapper.for_model = classmethod(for_model)  # type: ignore[method-assign,assignment]
        BaseModel.model_rebuild = classmethod(model_rebuild)  # type: ignore[method-assign,assignment]
