from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Body(BaseModel):
    """A request body: unknown fields are a 400 naming them; types are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
