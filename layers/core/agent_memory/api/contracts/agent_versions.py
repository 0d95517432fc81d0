"""Agent versions and their memory options (API.md, "Agents' memory options"; seed 003)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from agent_memory.api.contracts.base import Answer, Body

if TYPE_CHECKING:
    from agent_memory.persistence.agent_versions import Version

_SWITCH = {"type": "boolean"}
_MODEL = {"type": ["string", "null"], "description": "a model named provider/model"}
_TEXT = {"type": ["string", "null"], "maxLength": 4000}
_DURATION: dict[str, Any] = {
    "description": 'milliseconds, a duration "<n>ms|s|m|h|hr|d", "auto", or false',
    "anyOf": [
        {"type": "integer", "minimum": 0},
        {"type": "string", "pattern": r"^(\d+(ms|s|m|h|hr|d)|auto)$"},
        {"const": False},
    ],
}
_SHARE = {"type": "number", "exclusiveMinimum": 0, "maximum": 1}
_MULTIPLIER = {"type": "number", "minimum": 1, "maximum": 10}
_TOKENS = {"type": "integer", "minimum": 1000, "maximum": 1000000}
_SCOPE = {"enum": ["resource", "thread"]}


def _option(properties: dict[str, Any]) -> dict[str, Any]:
    """`true`/`false`, or an object (without `enabled`: on); null is the default."""
    body = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"enabled": _SWITCH, **properties},
    }
    return {"anyOf": [{"type": "boolean"}, {"type": "null"}, body]}


def _object(properties: dict[str, Any], *, nullable: bool = False) -> dict[str, Any]:
    kind: str | list[str] = ["object", "null"] if nullable else "object"
    return {"type": kind, "additionalProperties": False, "properties": properties}


# A JSON Schema for editors; domain/memory_options.py stays the reference.
MEMORY_OPTIONS_SCHEMA: dict[str, Any] = _object(
    {
        "lastMessages": {
            "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": 200},
                {"const": False},
                {"type": "null"},
            ],
            "default": 10,
        },
        "generateTitle": _option({"model": _MODEL, "instructions": _TEXT}),
        "semanticRecall": _option(
            {
                "topK": {"type": "integer", "minimum": 1, "maximum": 30, "default": 5},
                "messageRange": {
                    "anyOf": [
                        {"type": "integer", "minimum": 0, "maximum": 10},
                        _object(
                            {
                                "before": {"type": "integer", "minimum": 0, "maximum": 10},
                                "after": {"type": "integer", "minimum": 0, "maximum": 10},
                            }
                        ),
                    ],
                    "default": 2,
                },
                "scope": _SCOPE,
            }
        ),
        "workingMemory": _option(
            {
                "scope": _SCOPE,
                "template": {"type": ["string", "null"]},
                "schema": {"type": ["object", "null"]},
                "agentManaged": {"type": ["boolean", "null"]},
            }
        ),
        "observationalMemory": _option(
            {
                "model": _MODEL,
                "scope": {"enum": ["thread"]},
                "activateAfterIdle": _DURATION,
                "retrieval": _option({"vector": _SWITCH, "scope": _SCOPE, "instructions": _TEXT}),
                "observation": _object(
                    {
                        "model": _MODEL,
                        "messageTokens": _TOKENS,
                        "bufferTokens": {"type": "number", "exclusiveMinimum": 0},
                        "bufferActivation": _SHARE,
                        "blockAfter": _MULTIPLIER,
                        "bufferOnIdle": _SWITCH,
                        "manageWorkingMemory": _SWITCH,
                        "threadTitle": _SWITCH,
                        "instruction": _TEXT,
                        "activateAfterIdle": {
                            **_DURATION,
                            "anyOf": [*_DURATION["anyOf"], {"type": "null"}],
                        },
                    },
                    nullable=True,
                ),
                "reflection": _object(
                    {
                        "model": _MODEL,
                        "observationTokens": _TOKENS,
                        "bufferActivation": _SHARE,
                        "blockAfter": _MULTIPLIER,
                        "activateAfterIdle": _DURATION,
                        "instruction": _TEXT,
                    },
                    nullable=True,
                ),
            }
        ),
        "readOnly": {"type": ["boolean", "null"]},
    },
    nullable=True,
)
MEMORY_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "properties": {"options": MEMORY_OPTIONS_SCHEMA},
    "description": "seed 003's memory block; null restores the platform defaults",
}


class PatchDraft(Body):
    """Replace the draft's `memory` block (no deep merge); a missing `memory` keeps it."""

    memory: dict[str, Any] | None = Field(default=None, json_schema_extra=MEMORY_SCHEMA)


class EmptyBody(Body):
    pass


class EffectiveMemory(Answer):
    memory: dict[str, Any]

    @classmethod
    def of(cls, memory: dict[str, Any] | None) -> EffectiveMemory:
        """The block with every default filled in."""
        # Loaded with the services, not with the routes (a cold start stays cheap).
        from agent_memory.domain.memory_options import effective

        return cls(memory=effective(memory))


class DraftOut(Answer):
    memory: dict[str, Any] | None
    effective: EffectiveMemory


class DraftAnswer(Answer):
    draft: DraftOut

    @classmethod
    def of(cls, memory: dict[str, Any] | None) -> DraftAnswer:
        return cls(draft=DraftOut(memory=memory, effective=EffectiveMemory.of(memory)))


class VersionOut(Answer):
    number: int
    memory: dict[str, Any] | None
    effective: EffectiveMemory
    publishedAt: int

    @classmethod
    def of(cls, version: Version) -> VersionOut:
        return cls(
            number=version.number,
            memory=version.memory,
            effective=EffectiveMemory.of(version.memory),
            publishedAt=version.published_at,
        )


class VersionAnswer(Answer):
    version: VersionOut


class VersionsAnswer(Answer):
    versions: list[VersionOut]
    active: int | None

    @classmethod
    def of(cls, page: tuple[list[Version], int | None]) -> VersionsAnswer:
        versions, active = page
        return cls(versions=[VersionOut.of(v) for v in versions], active=active)


class ActiveAnswer(Answer):
    active: int
