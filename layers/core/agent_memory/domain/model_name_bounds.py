"""What a model name may be, as the API's schema states it: the known providers and the
longest name. Here, not with the rules that parse names (domain/model_names.py), so the
contracts read them without loading those rules (ADR 0071)."""

from __future__ import annotations

PROVIDERS = ("local", "openai", "bedrock", "anthropic")
MAX_NAME_LENGTH = 200
# The only local learning model (adapters/rules_model.py).
LOCAL_MODELS = ("local/rules",)
