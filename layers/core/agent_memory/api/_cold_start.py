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


OPENAPI_MODELS = "fastapi.openapi.models"


def defer_openapi_models() -> None:
    """Build FastAPI's OpenAPI document models (about 40 pydantic models, a third of an
    empty FastAPI app's import) when `/openapi.json` first needs them, not at import: no
    REST request validates an OpenAPI model (docs/decisions.md, "OpenAPI models built on
    first use").

    While `fastapi.openapi.models` is imported, its classes get pydantic's public
    `defer_build` setting (through pydantic's private `ConfigWrapper.for_model`, the one
    place a class's config is assembled) and the module's own `model_rebuild()` calls at
    its end are skipped; pydantic builds each model at its first validation. Nothing happens
    when FastAPI is already imported. tests/api/test_cold_start.py fails loudly if a pydantic
    or FastAPI upgrade changes either hook."""
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
