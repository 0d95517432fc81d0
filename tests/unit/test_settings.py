"""Settings from the environment (by their exact variable names) and the API keys they
name, read from Secrets Manager (moto) at the first model call."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import ValidationError

from agent_memory.adapters.choice import model_catalog
from agent_memory.adapters.models import ModelCatalogImpl
from agent_memory.adapters.secrets import ApiKey, SecretReader
from agent_memory.config import Settings, load_settings
from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.tasks.memory_changes import MEMORY_CHANGES, LearningRequest
from agent_memory.ports import ModelFailure

# What template.yaml passes when every optional parameter is left empty.
DEPLOYED = {
    "TABLE_NAME": "stack-MemoryTable-1",
    "KMS_KEY_ID": "arn:aws:kms:eu-west-1:123456789012:key/k-1",
    "STATE_MACHINE_ARN": "arn:aws:states:eu-west-1:123456789012:stateMachine:stack-learning",
    "DEFAULT_MODEL": "bedrock/anthropic.claude-3-5-haiku-20241022-v1:0",
    "MEMORY_ADMIN_TOKEN_SHA256": "ab" * 32,
    "OPENAI_BASE_URL": "",
    "OPENAI_API_KEY_SECRET_ARN": "",
    "MEMORY_TEXT_MAX_LENGTH": "12000",
    "AWS_REGION": "eu-west-1",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "POWERTOOLS_SERVICE_NAME": "agent-memory",
    "LOG_LEVEL": "INFO",
    "AWS_ENDPOINT_URL": "",
}
REQUEST = MEMORY_CHANGES.request(
    LearningRequest(
        "session",
        (EvidenceItem("i-01", "user", "My budget is 1500 EUR."),),
        (),
        ("fact",),
    )
)


# --- settings -----------------------------------------------------------------------------


def test_the_deployed_environment_reads_every_variable() -> None:
    settings = load_settings(DEPLOYED)
    assert settings.table_name == "stack-MemoryTable-1"
    assert settings.kms_key_id == "arn:aws:kms:eu-west-1:123456789012:key/k-1"
    assert settings.state_machine_arn.endswith(":stateMachine:stack-learning")
    assert settings.default_model == "bedrock/anthropic.claude-3-5-haiku-20241022-v1:0"
    assert settings.admin_token_sha256 == "ab" * 32
    assert settings.memory_text_max_length == 12000
    assert settings.region == "eu-west-1"
    # Blank parameters mean the defaults.
    assert settings.openai_base_url == "https://api.openai.com/v1"
    assert settings.openai_api_key_secret_arn == ""


def test_an_empty_environment_gives_the_local_defaults() -> None:
    assert load_settings({}) == Settings()
    assert Settings().default_model == "local/rules"
    assert Settings().table_name == "agent-memory"


def test_a_blank_default_model_means_no_model_but_an_absent_one_means_local_rules() -> None:
    assert load_settings({"DEFAULT_MODEL": ""}).default_model is None
    assert load_settings({}).default_model == "local/rules"


def test_the_lambda_region_wins_over_the_shell_default() -> None:
    both = {"AWS_REGION": "eu-central-1", "AWS_DEFAULT_REGION": "us-west-2"}
    assert load_settings(both).region == "eu-central-1"
    assert load_settings({"AWS_DEFAULT_REGION": "us-west-2"}).region == "us-west-2"


def test_local_switches_and_urls() -> None:
    settings = load_settings(
        {
            "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1/",
            "OPENAI_API_KEY": "sk-local",
            "OFFLOAD_BLOCKING_CALLS": "true",
            "KEY_CACHE_SECONDS": "60",
        }
    )
    assert settings.openai_base_url == "http://127.0.0.1:11434/v1"
    assert settings.offload_blocking_calls is True
    assert settings.key_cache_seconds == 60.0
    assert "sk-local" not in repr(settings)


def test_variables_are_read_by_their_exact_names_only() -> None:
    assert load_settings({"table_name": "lower", "TABLE_NAME_X": "other"}).table_name == (
        "agent-memory"
    )


def test_the_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "from-the-process")
    assert load_settings().table_name == "from-the-process"


def test_a_malformed_value_names_its_variable() -> None:
    with pytest.raises(ValidationError, match="MEMORY_TEXT_MAX_LENGTH"):
        load_settings({"MEMORY_TEXT_MAX_LENGTH": "lots"})
    with pytest.raises(ValidationError, match="OFFLOAD_BLOCKING_CALLS"):
        load_settings({"OFFLOAD_BLOCKING_CALLS": "maybe"})


# --- API keys from Secrets Manager --------------------------------------------------------


@pytest.fixture
def secretsmanager(local_aws: tuple[Any, Any]) -> Any:
    session, _local = local_aws
    return session.client("secretsmanager")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingClient:
    """The real (moto) client, counting GetSecretValue calls."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.reads = 0

    def get_secret_value(self, **kwargs: Any) -> Any:
        self.reads += 1
        return self.client.get_secret_value(**kwargs)


def test_a_secret_is_read_once_per_max_age_then_again(secretsmanager: Any) -> None:
    arn = secretsmanager.create_secret(Name="openai-key", SecretString="sk-first\n")["ARN"]
    client = CountingClient(secretsmanager)
    clock = Clock()
    read = SecretReader(lambda: client, max_age_s=300, clock=clock)
    assert read(arn) == "sk-first"
    secretsmanager.put_secret_value(SecretId=arn, SecretString="sk-rotated")
    clock.now += 299
    assert (read(arn), client.reads) == ("sk-first", 1)
    clock.now += 2
    assert (read(arn), client.reads) == ("sk-rotated", 2)


def test_a_missing_or_empty_secret_is_a_config_failure(secretsmanager: Any) -> None:
    read = SecretReader(lambda: secretsmanager)
    with pytest.raises(ModelFailure) as missing:
        read("arn:aws:secretsmanager:us-east-1:123456789012:secret:nope-AbCdEf")
    assert (missing.value.kind, missing.value.retryable) == ("config", False)
    blank = secretsmanager.create_secret(Name="blank", SecretString=" ")["ARN"]
    with pytest.raises(ModelFailure) as empty:
        read(blank)
    assert (empty.value.kind, empty.value.retryable) == ("config", False)


def test_an_unreachable_secrets_manager_is_retryable() -> None:
    from botocore.exceptions import EndpointConnectionError

    class Unreachable:
        def get_secret_value(self, **kwargs: Any) -> Any:
            raise EndpointConnectionError(endpoint_url="https://secretsmanager")

    with pytest.raises(ModelFailure) as failure:
        SecretReader(Unreachable)("arn:aws:secretsmanager:us-east-1:1:secret:k")
    assert (failure.value.kind, failure.value.retryable) == ("unavailable", True)


@pytest.fixture
def completions() -> Iterator[tuple[str, list[str]]]:
    """A Chat Completions endpoint that records each request's Authorization header."""
    seen: list[str] = []
    answer = json.dumps(
        {"choices": [{"message": {"content": '{"changes": []}'}, "finish_reason": "stop"}]}
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()


def test_the_secret_is_read_at_the_first_model_call_not_when_a_name_is_checked(
    secretsmanager: Any, completions: tuple[str, list[str]]
) -> None:
    url, seen = completions
    arn = secretsmanager.create_secret(Name="openai-key", SecretString="sk-secret")["ARN"]
    client = CountingClient(secretsmanager)
    key = ApiKey("", arn, SecretReader(lambda: client))
    catalog = ModelCatalogImpl(openai_base_url=url, openai_api_key=key)
    model = catalog.resolve("openai/gpt-4o-mini")
    assert model is not None
    assert model.name == "openai/gpt-4o-mini"
    assert catalog.resolve("openai/") is None
    assert client.reads == 0
    model.propose(REQUEST)
    model.propose(REQUEST)
    assert client.reads == 1
    assert seen == ["Bearer sk-secret", "Bearer sk-secret"]


def test_a_key_in_the_environment_wins_over_the_secret(
    secretsmanager: Any, completions: tuple[str, list[str]]
) -> None:
    url, seen = completions
    client = CountingClient(secretsmanager)
    key = ApiKey("sk-env", "arn:aws:secretsmanager:x", SecretReader(lambda: client))
    model = ModelCatalogImpl(openai_base_url=url, openai_api_key=key).resolve("openai/gpt-4o")
    assert model is not None
    model.propose(REQUEST)
    assert (seen, client.reads) == (["Bearer sk-env"], 0)


def test_an_unreadable_secret_fails_the_model_call(secretsmanager: Any) -> None:
    missing = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-AbCdEf"
    key = ApiKey("", missing, SecretReader(lambda: secretsmanager))
    model = ModelCatalogImpl(openai_api_key=key).resolve("openai/gpt-4o-mini")
    assert model is not None
    with pytest.raises(ModelFailure) as failure:
        model.propose(REQUEST)
    assert failure.value.kind == "config"


def test_the_deployed_wiring_sends_the_secrets_key_to_the_endpoint(
    local_aws: tuple[Any, Any], secretsmanager: Any, completions: tuple[str, list[str]]
) -> None:
    session, _local = local_aws
    url, seen = completions
    arn = secretsmanager.create_secret(Name="openai-key", SecretString="sk-from-secret")["ARN"]
    settings = load_settings({"OPENAI_BASE_URL": url, "OPENAI_API_KEY_SECRET_ARN": arn})
    model = model_catalog(settings, session).resolve("openai/gpt-4o-mini")
    assert model is not None
    assert seen == []
    reply = model.propose(REQUEST)
    assert json.loads(reply.text) == {"changes": []}
    assert seen == ["Bearer sk-from-secret"]


def test_the_public_endpoint_needs_a_key_or_a_secret() -> None:
    assert model_catalog(load_settings({})).resolve("openai/gpt-4o-mini") is None
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:openai-AbCdEf"
    with_secret = model_catalog(load_settings({"OPENAI_API_KEY_SECRET_ARN": arn}))
    assert with_secret.resolve("openai/gpt-4o-mini") is not None


def test_a_secret_keyed_model_still_obeys_allowed_models() -> None:
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:openai-AbCdEf"
    settings = load_settings({"OPENAI_API_KEY_SECRET_ARN": arn, "ALLOWED_MODELS": "openai/gpt-4o"})
    catalog = model_catalog(settings)
    assert catalog.resolve("openai/gpt-4o") is not None
    assert catalog.resolve("openai/gpt-4o-mini") is None


def test_the_title_and_observer_models_are_deployment_settings() -> None:
    from agent_memory.config import load_settings

    named = load_settings({"TITLE_MODEL": "openai/gpt-4o-mini", "OBSERVER_MODEL": ""})
    assert (named.title_model, named.observer_model) == ("openai/gpt-4o-mini", None)
    assert load_settings({}).title_model is None


def test_model_prices_are_read_for_budgets_and_a_bad_table_is_refused() -> None:
    import pytest

    from agent_memory.config import load_settings
    from agent_memory.domain.memory_bot import Price, cost_micros, parse_prices

    table = '{"openai/gpt-4o-mini": [150000, 600000]}'
    prices = parse_prices(load_settings({"MODEL_PRICES": table}).model_prices)
    assert prices == {"openai/gpt-4o-mini": Price(150_000, 600_000)}
    assert cost_micros(prices["openai/gpt-4o-mini"], 1_000_000, 0) == 150_000
    assert parse_prices("") == {}
    with pytest.raises(ValueError, match="MODEL_PRICES"):
        parse_prices('{"openai/gpt-4o-mini": [1.5, 2]}')
