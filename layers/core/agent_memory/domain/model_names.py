"""Model names: `provider/model`, and which of them a deployment and an organization allow
(API.md, "Local run" / Models, and the organization settings' `allowedModels`).

- A name is `provider/model` with a known provider; the model part is one or more segments
  of `[A-Za-z0-9._:@+=,-]` separated by `/` (Hugging Face style ids have one), none of
  them `.` or `..`: `bedrock/../../etc` is a 400, never a path.
- A pattern is a name or `provider/*`.
- `ALLOWED_MODELS` (the deployment) is a comma-separated list of patterns. Unset, every
  known provider is allowed. An organization's `allowedModels` only narrows it: a model
  must match both lists.
- A model must also be one this deployment can run: where a person names one, a provider it
  has not configured is a 400 saying which configuration is missing (`not_configured`); a
  stored name whose provider stops being configured later counts as "no model".
- A stored name the organization's `allowedModels` no longer allows is never called: every
  run that would call it is skipped, saying so (`disallowed`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.model_name_bounds import LOCAL_MODELS, MAX_NAME_LENGTH, PROVIDERS

MAX_PATTERNS = 100
# What a provider needs before this deployment can run its models: what it lacks, and the
# settings that configure it (never their values).
NEEDS: dict[str, tuple[str, str]] = {
    "openai": ("OpenAI-compatible endpoint", "OPENAI_API_KEY / OPENAI_BASE_URL"),
    "anthropic": ("Anthropic key", "ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL"),
    "bedrock": (
        "AWS credentials for Amazon Bedrock",
        "it runs on AWS; on one machine AWS_PROFILE or AWS_ACCESS_KEY_ID, and AWS_REGION",
    ),
}

_SEGMENT = re.compile(r"[A-Za-z0-9._:@+=,-]+")


@dataclass(frozen=True)
class ModelName:
    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"


def parse_model_name(name: str, path: Sequence[str | int]) -> ModelName:
    """Split `provider/model`; a malformed name or an unknown provider is a 400 naming
    `path`."""
    if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH:
        raise ValidationFailed(f"a model name is at most {MAX_NAME_LENGTH} characters", path)
    provider, sep, model = name.partition("/")
    if not sep or not model.strip():
        raise ValidationFailed("a model is named 'provider/model'", path)
    _known(provider, path)
    for segment in model.split("/"):
        if segment in {".", ".."} or not _SEGMENT.fullmatch(segment):
            raise ValidationFailed(
                "a model name has letters, digits and . _ : @ + = , - between slashes", path
            )
    return ModelName(provider, model)


def parse_pattern(pattern: str, path: Sequence[str | int]) -> str:
    """A model name or `provider/*` (a 400 naming `path` otherwise)."""
    text = pattern.strip() if isinstance(pattern, str) else pattern
    provider, sep, rest = text.partition("/") if isinstance(text, str) else ("", "", "")
    if sep and rest == "*":
        _known(provider, path)
        return text
    return str(parse_model_name(text, path))


def _known(provider: str, path: Sequence[str | int]) -> None:
    if provider not in PROVIDERS:
        raise ValidationFailed(
            f"unknown model provider {provider!r}; known: {', '.join(PROVIDERS)}", path
        )


def parse_patterns(patterns: Sequence[str], path: Sequence[str | int]) -> tuple[str, ...]:
    """A list of patterns (an organization's `allowedModels`), each checked at its index."""
    if len(patterns) > MAX_PATTERNS:
        raise ValidationFailed(f"at most {MAX_PATTERNS} model patterns", path)
    return tuple(parse_pattern(p, [*path, index]) for index, p in enumerate(patterns))


def matches(name: str, patterns: Sequence[str]) -> bool:
    """`name` is one of `patterns`, or its provider's `provider/*` is."""
    provider = name.partition("/")[0]
    return name in patterns or f"{provider}/*" in patterns


@dataclass(frozen=True)
class ModelPolicy:
    """The deployment's allowed models (`ALLOWED_MODELS`); None allows every known
    provider."""

    patterns: tuple[str, ...] | None = None

    @classmethod
    def from_setting(cls, text: str | None) -> ModelPolicy:
        """`ALLOWED_MODELS` as set: comma-separated patterns; blank or unset is the default.
        A malformed pattern fails the start (a 400 would blame the caller)."""
        if not text or not text.strip():
            return cls(None)
        parts = [part.strip() for part in text.split(",") if part.strip()]
        return cls(parse_patterns(parts, ["ALLOWED_MODELS"]))

    def allows(self, name: str) -> bool:
        return self.patterns is None or matches(name, self.patterns)

    def check(
        self, name: str, path: Sequence[str | int], organization: Sequence[str] | None = None
    ) -> ModelName:
        """`name` parsed, or a 400 naming `path` when it is malformed, of an unknown provider,
        or outside the deployment's or the organization's allowed models."""
        parsed = parse_model_name(name, path)
        if not self.allows(name):
            raise ValidationFailed(f"model {name!r} is not allowed in this deployment", path)
        if organization is not None and not matches(name, organization):
            raise ValidationFailed(f"model {name!r} is not allowed in this organization", path)
        return parsed


def disallowed(name: str | None, organization: Sequence[str] | None) -> str | None:
    """Why a run may not call the stored `name` under the organization's current
    `allowedModels` (None: the deployment's list, which the catalog enforces); None: it may."""
    if name is None or organization is None or matches(name, organization):
        return None
    return f"the model {name} is not in the organization's allowedModels; it is not called"


def not_configured(name: str) -> str:
    """Why this deployment cannot run `name` (a well-formed name of a known provider)."""
    provider = name.partition("/")[0]
    if provider not in NEEDS:
        return f"{name}: this deployment has no such model (local: {', '.join(LOCAL_MODELS)})"
    what, settings = NEEDS[provider]
    return f"{name}: this deployment has no {what} configured ({settings})"


def narrowed(patterns: Sequence[str], by: Sequence[str] | None) -> tuple[str, ...]:
    """The names and patterns that match both `patterns` and `by` (None: no narrowing),
    as patterns again: `openai/*` narrowed by `openai/gpt-4o` is `openai/gpt-4o`."""
    if by is None:
        return tuple(patterns)
    out: list[str] = []
    for pattern in patterns:
        provider, _, rest = pattern.partition("/")
        if rest != "*":
            kept = [pattern] if matches(pattern, by) else []
        elif pattern in by:
            kept = [pattern]
        else:
            kept = [p for p in by if p.partition("/")[0] == provider and not p.endswith("/*")]
        out += [p for p in kept if p not in out]
    return tuple(out)
