"""Each function's IAM policy in template.yaml, evaluated as IAM would evaluate it (offline).

moto evaluates no IAM condition (its access control skips `Condition` outside trust policies)
and has no SimulatePrincipalPolicy, so `Policy` below does, for what the template uses:
Allow/Deny, Action and Resource wildcards, and the operators StringEquals, StringLike,
ArnLike, Bool, Null and their ForAllValues:/ForAnyValue: forms (any other fails the test).

- The static tests ask the policies what a function must and must not be able to do.
- `test_every_request_of_every_function_is_allowed` runs a scenario through HTTP and the
  real state machine on the embedded AWS, records every DynamoDB, KMS and Step Functions
  request each function makes, as the IAM request it is (a transaction's items one by one,
  `dynamodb:LeadingKeys`, `dynamodb:Attributes`, the encryption context), and asks the
  function's policy about each one: a new partition prefix or a new encryption scope that
  the template does not grant fails here, not in AWS.
"""

from __future__ import annotations

import contextvars
import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support.iam import (
    ACCOUNT,
    API_FAMILY_FUNCTIONS,
    FUNCTIONS,
    KEY_ARN,
    MACHINE_ARN,
    REGION,
    SECRET_ARN,
    STEPS,
    TABLE,
    TABLE_ARN,
    WRITES,
    Deployment,
    Request,
    _glob,
    _holds,
    _list,
    item,
    policy,
    sealed,
)

# ------------------------------------------------------------------ the template, resolved


# ------------------------------------------------------------------ the evaluator


# ------------------------------------------------------------------ what each may do


@pytest.mark.parametrize("function", FUNCTIONS)
def test_no_wildcard_action_or_resource(template: dict[str, Any], function: str) -> None:
    granted = policy(template, function, Deployment({"OpenAIApiKeySecretArn": SECRET_ARN}))
    for statement in granted.statements:
        assert statement["Effect"] in {"Allow", "Deny"}
        for action in _list(statement["Action"]):
            assert "*" not in action, f"{function}: {statement['Sid']} grants {action}"
        for resource in _list(statement["Resource"]):
            assert resource != "*", f"{function}: {statement['Sid']} on *"
            # Only Bedrock's model ARNs are patterns (regions, families): recorded in
            # ADR 0048. Nothing else names more than one resource.
            if "*" in resource:
                assert resource.startswith("arn:aws:bedrock:"), resource


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_table_statement_is_bound_to_partition_prefixes(
    template: dict[str, Any], function: str
) -> None:
    for statement in policy(template, function).statements:
        if statement["Effect"] != "Allow" or not any(
            a.startswith("dynamodb:") for a in _list(statement["Action"])
        ):
            continue
        assert statement["Resource"] == TABLE_ARN  # no index: nothing queries gsi1 today
        prefixes = statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
        assert prefixes
        assert all(re.fullmatch(r"[A-Z]+#\*", p) for p in prefixes), prefixes


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_key_use_carries_an_encryption_context_condition(
    template: dict[str, Any], function: str
) -> None:
    crypto = {"kms:encrypt", "kms:decrypt", "kms:generatedatakey"}
    for statement in policy(template, function).statements:
        actions = {a.lower() for a in _list(statement["Action"])}
        if not actions & crypto:
            continue
        assert statement["Resource"] == KEY_ARN
        keys = {k for c in statement["Condition"].values() for k in c}
        assert any(k.startswith("kms:EncryptionContext") for k in keys), statement["Sid"]


@pytest.mark.parametrize("function", API_FAMILY_FUNCTIONS)
def test_every_api_family_function_has_the_api_policy_and_nothing_else(
    template: dict[str, Any], function: str
) -> None:
    listed = template["Resources"][function]["Properties"]["Policies"]
    assert listed[0] == {"Ref": "ApiPolicy"}
    assert template["Resources"]["ApiFunction"]["Properties"]["Policies"] == [{"Ref": "ApiPolicy"}]
    api = policy(template, "ApiFunction").statements
    extra = [s for s in policy(template, function).statements if s not in api]
    assert policy(template, function).statements[: len(api)] == api
    # Only the threads family adds a grant: its observer's synchronous `blockAfter` call.
    assert [s["Sid"] for s in extra] == (
        ["InvokeAllowedModelsForBlockAfter"] if function == "ApiThreadsFunction" else []
    )


@pytest.mark.parametrize(
    ("model", "allowed"),
    [
        ("foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0", True),
        ("foundation-model/amazon.nova-lite-v1:0", True),
        ("foundation-model/meta.llama3-70b-instruct-v1:0", False),
    ],
)
def test_only_the_threads_family_calls_the_observer_model(
    template: dict[str, Any], model: str, allowed: bool
) -> None:
    deployment = Deployment({"AllowedModels": "anthropic.claude,amazon.nova"})
    arn = f"arn:aws:bedrock:us-west-2::{model}"
    profile = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/us.{model.split('/')[1]}"
    for function in API_FAMILY_FUNCTIONS:
        grants = policy(template, function, deployment)
        expected = allowed and function == "ApiThreadsFunction"
        assert grants.allows(Request("bedrock:InvokeModel", arn)) is expected, function
        assert grants.allows(Request("bedrock:InvokeModel", profile)) is expected, function
        assert grants.granted("bedrock:") <= {"bedrock:InvokeModel"}


def test_the_api_cannot_forge_a_model_answer(template: dict[str, Any]) -> None:
    api = policy(template, "ApiFunction")
    learn = "LEARN#session#s-1"
    # The executions it records for waits and skipped turns: yes.
    assert api.allows(item("PutItem", learn, ["pk", "sk", "type", "status", "detail"]))
    assert api.allows(item("UpdateItem", learn, ["status", "upto", "releasedAt"]))
    # A saved model call or its answer (only CallModel writes them): no.
    call = ["pk", "sk", "type", "execution", "step", "attempt", "request", "model"]
    assert not api.allows(item("PutItem", learn, call))
    assert not api.allows(item("UpdateItem", learn, ["status", "reply", "usage"]))
    # The answer's own row: a Put with the same attribute names.
    answer = ["pk", "sk", "type", "status", "endedAt", "reply", "usage", "latencyMs", "ttl"]
    assert not api.allows(item("PutItem", learn, answer))
    assert policy(template, "CallModelFunction").allows(item("PutItem", learn, answer))
    assert policy(template, "CallModelFunction").allows(item("PutItem", learn, call))


def test_the_api_reaches_only_the_partitions_it_serves(template: dict[str, Any]) -> None:
    api = policy(template, "ApiFunction")
    for pk in ("ORG#o-1", "TOKEN#ab12", "SESSION#s-1", "AMEM#o-1#E#u-1#R", "WAIT#turn:o:s:1"):
        assert api.allows(item("PutItem", pk)), pk
    assert not api.allows(item("PutItem", "NOTES#s-1"))
    assert not api.allows(item("Scan", "SESSION#s-1"))
    # BatchGetItem is allowed only when every key is: one foreign key refuses the batch.
    both = Request("dynamodb:BatchGetItem", TABLE_ARN, {"dynamodb:LeadingKeys": ["USER#u", "X#1"]})
    assert not api.allows(both)


@pytest.mark.parametrize(
    ("function", "pk", "action", "allowed"),
    [
        ("LoadEvidenceFunction", "SESSION#s-1", "GetItem", True),
        ("LoadEvidenceFunction", "LEARN#session#s-1", "PutItem", True),
        ("LoadEvidenceFunction", "SESSION#s-1", "PutItem", False),
        ("LoadEvidenceFunction", "LEARN#session#s-1", "DeleteItem", False),
        ("CallModelFunction", "LEARN#agent#a-1", "UpdateItem", True),
        ("CallModelFunction", "SESSION#s-1", "GetItem", False),
        ("CallModelFunction", "AGENT#a-1", "PutItem", False),
        ("ApplyLearningFunction", "SESSION#s-1", "DeleteItem", True),
        ("ApplyLearningFunction", "AGENT#a-1", "ConditionCheckItem", True),
        ("ApplyLearningFunction", "TOKEN#ab12", "PutItem", False),
        ("ApplyLearningFunction", "AMEM#o-1", "PutItem", False),
        ("RecordFailureFunction", "LEARN#session#s-1", "PutItem", True),
        ("RecordFailureFunction", "SESSION#s-1", "UpdateItem", False),
        ("RecordFailureFunction", "USER#u-1", "GetItem", False),
    ],
)
def test_learning_steps_reach_only_their_rows(
    template: dict[str, Any], function: str, pk: str, action: str, allowed: bool
) -> None:
    assert policy(template, function).allows(item(action, pk)) is allowed


def test_no_learning_step_touches_identity_or_agent_memories(template: dict[str, Any]) -> None:
    for function in STEPS:
        steps = policy(template, function)
        for pk in ("TOKEN#ab12", "TOKENPREFIX#amk_1", "AMEM#o-1", "WAIT#turn:o:s:1"):
            for action in WRITES:
                assert not steps.allows(item(action.removeprefix("dynamodb:"), pk)), (function, pk)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_content_key_opens_only_the_cipher_scope(
    template: dict[str, Any], function: str
) -> None:
    keys = policy(template, function)
    assert keys.allows(sealed("Decrypt", "learning"))
    assert keys.allows(sealed("GenerateDataKey", "learning"))
    # Another context key, a missing one, or none at all: refused.
    assert not keys.allows(sealed("Decrypt", "learning", extra="x"))
    assert not keys.allows(Request("kms:Decrypt", KEY_ARN, {}))
    partial = {"kms:EncryptionContextKeys": ["org", "field"], "kms:EncryptionContext:org": "o"}
    assert not keys.allows(
        Request("kms:Decrypt", KEY_ARN, partial | {"kms:EncryptionContext:field": "item"})
    )
    # The Encryption SDK with one key never calls Encrypt, nor re-encrypts.
    assert not keys.allows(Request("kms:Encrypt", KEY_ARN, sealed("Encrypt", "item").context))
    assert not keys.allows(Request("kms:ReEncryptFrom", KEY_ARN, sealed("Decrypt", "item").context))


@pytest.mark.parametrize(
    ("function", "fields"),
    [
        ("ApiFunction", {"item", "entry", "details", "learning"}),
        ("LoadEvidenceFunction", {"item", "entry", "details", "learning"}),
        ("ApplyLearningFunction", {"item", "entry", "details", "learning"}),
        # They see only the execution's sealed evidence, request, reply and error.
        ("CallModelFunction", {"learning"}),
        ("RecordFailureFunction", {"learning"}),
    ],
)
def test_content_fields_each_function_may_open(
    template: dict[str, Any], function: str, fields: set[str]
) -> None:
    keys = policy(template, function)
    opened = {
        f
        for f in ("item", "entry", "details", "learning", "other")
        if keys.allows(sealed("Decrypt", f))
    }
    assert opened == fields


@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_table_key_is_usable_only_through_dynamodb(
    template: dict[str, Any], function: str
) -> None:
    keys = policy(template, function)
    via = {"kms:ViaService": "dynamodb.us-east-1.amazonaws.com"}
    table = via | {"kms:EncryptionContext:aws:dynamodb:tableName": TABLE}
    assert keys.allows(Request("kms:Decrypt", KEY_ARN, table))
    assert keys.allows(Request("kms:DescribeKey", KEY_ARN, via))
    assert not keys.allows(
        Request(
            "kms:Decrypt", KEY_ARN, via | {"kms:EncryptionContext:aws:dynamodb:tableName": "other"}
        )
    )
    assert not keys.allows(Request("kms:DescribeKey", KEY_ARN, {}))
    assert not keys.allows(
        Request("kms:CreateGrant", KEY_ARN, {"kms:ViaService": "s3.us-east-1.amazonaws.com"})
    )


def test_only_the_api_starts_learning_on_the_learning_state_machine(
    template: dict[str, Any],
) -> None:
    start = Request("states:StartExecution", MACHINE_ARN)
    other = Request("states:StartExecution", MACHINE_ARN.replace("agent-memory-learning", "x"))
    for function in FUNCTIONS:
        states = policy(template, function)
        assert states.allows(start) is (function == "ApiFunction"), function
        assert not states.allows(other)
        assert states.granted("states:") <= {"states:StartExecution"}


@pytest.mark.parametrize(
    ("model", "allowed"),
    [
        ("foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0", True),
        ("foundation-model/amazon.nova-lite-v1:0", True),
        ("foundation-model/meta.llama3-70b-instruct-v1:0", False),
        ("foundation-model/anthropicXclaude", False),
    ],
)
def test_bedrock_only_on_the_allowed_model_families(
    template: dict[str, Any], model: str, allowed: bool
) -> None:
    deployment = Deployment({"AllowedModels": "anthropic.claude,amazon.nova"})
    call_model = policy(template, "CallModelFunction", deployment)
    # A cross-region inference profile routes to the model in another region.
    for region in ("us-east-1", "us-west-2"):
        arn = f"arn:aws:bedrock:{region}::{model}"
        assert call_model.allows(Request("bedrock:InvokeModel", arn)) is allowed, arn
    # Elsewhere only the embedding model of semantic recall (the context, the recall step,
    # and LoadEvidence, where an observer's run embeds first: thread_learning `carry`).
    titan = f"arn:aws:bedrock:{REGION}::foundation-model/amazon.titan-embed-text-v2:0"
    for function in ("ApiFunction", *STEPS[:1], *STEPS[2:]):
        grants = policy(template, function, deployment)
        assert grants.granted("bedrock:") <= {"bedrock:InvokeModel"}
        chat = f"arn:aws:bedrock:{REGION}::{model}"
        assert not grants.allows(Request("bedrock:InvokeModel", chat))
        if grants.granted("bedrock:"):
            assert function in {"ApiFunction", "LoadEvidenceFunction", "ApplyLearningFunction"}
            assert grants.allows(Request("bedrock:InvokeModel", titan))


def test_bedrock_inference_profiles_of_the_allowed_families(template: dict[str, Any]) -> None:
    call_model = policy(template, "CallModelFunction")
    profile = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/"
    assert call_model.allows(
        Request("bedrock:InvokeModel", profile + "us.anthropic.claude-3-5-haiku-20241022-v1:0")
    )
    assert not call_model.allows(
        Request("bedrock:InvokeModel", profile + "us.meta.llama3-2-1b-instruct-v1:0")
    )
    # Application profiles have opaque ids (no family): not granted.
    opaque = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:application-inference-profile/abc123"
    assert not call_model.allows(Request("bedrock:InvokeModel", opaque))
    # Converse is authorised by InvokeModel; nothing streams.
    assert call_model.granted("bedrock:") == {"bedrock:InvokeModel"}


def test_the_secret_is_readable_by_call_model_only_and_only_when_configured(
    template: dict[str, Any],
) -> None:
    read = Request("secretsmanager:GetSecretValue", SECRET_ARN)
    configured = Deployment({"OpenAIApiKeySecretArn": SECRET_ARN})
    for function in FUNCTIONS:
        assert policy(template, function, configured).allows(read) is (
            function == "CallModelFunction"
        )
        assert not policy(template, function).allows(read)
    other = Request("secretsmanager:GetSecretValue", SECRET_ARN.replace("openai", "other"))
    assert not policy(template, "CallModelFunction", configured).allows(other)


def test_the_evaluator_reads_conditions_as_iam_does() -> None:
    """ForAllValues over an absent key holds (why every KMS statement adds Null checks);
    ForAnyValue over it does not; an unqualified operator needs the key."""
    assert _holds("ForAllValues:StringEquals", "k", ["a"], {})
    assert not _holds("ForAnyValue:StringEquals", "k", ["a"], {})
    assert not _holds("StringEquals", "k", ["a"], {})
    assert _holds("StringLike", "K", ["a*"], {"k": "abc"})  # keys are case-insensitive
    assert _holds("Null", "k", "true", {})
    assert not _holds("Null", "k", "false", {})
    assert not _glob("arn:aws:x:*:1", "arn:aws:x:a:2")
    with pytest.raises(KeyError):
        _holds("NumericLessThan", "k", ["1"], {"k": "0"})


# ------------------------------------------------------------------ every request, recorded

_running: contextvars.ContextVar[str | None] = contextvars.ContextVar("function", default=None)
_IAM_PREFIX = {"sfn": "states"}


@contextmanager
def running(function: str) -> Iterator[None]:
    token = _running.set(function)
    try:
        yield
    finally:
        _running.reset(token)


@dataclass
class Recorder:
    """The IAM requests each function's AWS calls amount to."""

    requests: dict[str, list[Request]] = field(default_factory=dict)

    def install(self, botocore_session: Any) -> None:
        botocore_session.register("before-parameter-build", self._record)

    def _record(self, params: Mapping[str, Any], model: Any, event_name: str, **_: Any) -> None:
        function = _running.get()
        if function is None:
            return  # the test's own calls (waiting for executions, reading history)
        service = event_name.split(".")[1]
        found = self.requests.setdefault(function, [])
        if service == "dynamodb":
            found += _dynamodb(model.name, params)
        elif service == "kms":
            found.append(_kms(model.name, params))
        elif service == "sfn":
            found.append(Request(f"states:{model.name}", params.get("stateMachineArn", "")))
        else:
            found.append(Request(f"{_IAM_PREFIX.get(service, service)}:{model.name}", "?"))


def _dynamodb(operation: str, params: Mapping[str, Any]) -> list[Request]:
    arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{params.get('TableName', TABLE)}"
    if operation == "TransactWriteItems":
        kinds = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem"}
        kinds["ConditionCheck"] = "ConditionCheckItem"
        return [
            _dynamodb(kinds[kind], body)[0]
            for entry in params["TransactItems"]
            for kind, body in entry.items()
        ]
    if operation == "BatchGetItem":
        [(table, request)] = params["RequestItems"].items()
        pks = [k["pk"]["S"] for k in request["Keys"]]
        return [
            Request(
                "dynamodb:BatchGetItem", arn.replace(TABLE, table), {"dynamodb:LeadingKeys": pks}
            )
        ]
    context: dict[str, Any] = {}
    if operation == "Query":
        _name, placeholder = re.match(r"(#\w+) = (:\w+)", params["KeyConditionExpression"]).groups()  # type: ignore[union-attr]
        context["dynamodb:LeadingKeys"] = [params["ExpressionAttributeValues"][placeholder]["S"]]
        if "IndexName" in params:
            arn += f"/index/{params['IndexName']}"
    elif "Item" in params:
        context["dynamodb:LeadingKeys"] = [params["Item"]["pk"]["S"]]
        context["dynamodb:Attributes"] = list(params["Item"])
    elif "Key" in params:
        context["dynamodb:LeadingKeys"] = [params["Key"]["pk"]["S"]]
        names = params.get("ExpressionAttributeNames", {})
        updated = re.findall(r"#\w+", params.get("UpdateExpression", ""))
        if updated:
            context["dynamodb:Attributes"] = ["pk", "sk", *(names[n] for n in updated)]
    return [Request(f"dynamodb:{operation}", arn, context)]


def _kms(operation: str, params: Mapping[str, Any]) -> Request:
    scope = params.get("EncryptionContext") or {}
    context: dict[str, Any] = {}
    if scope:
        context["kms:EncryptionContextKeys"] = list(scope)
        context |= {f"kms:EncryptionContext:{k}": v for k, v in scope.items()}
    return Request(f"kms:{operation}", str(params.get("KeyId", "?")), context)


HELPER = "openai/helper"


def _remember(request: Any) -> str:
    change = {"op": "remember", "key": "tests-first", "content": "Run the tests first."}
    return json.dumps({"changes": [change | {"kind": "procedure", "sources": ["i-01"]}]})


@pytest.fixture
def recorded(local_aws: Any, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A world whose AWS calls are recorded per function: the key named by its ARN, as
    template.yaml's KMS_KEY_ID is (an alias would add a DescribeKey no deployment makes),
    the helper model scripted (learning in the real session and agent pools)."""
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from infra.local import aws as local_aws_module
    from tests.support.state_machine import _handlers, workflow

    session, local = local_aws
    recorder = Recorder()
    recorder.install(session._session)
    # Every seal and open asks KMS: the functions share one process (and data key cache)
    # here, where in AWS each cold function asks for the contexts it uses itself.
    settings = settings.model_copy(
        update={"kms_key_id": local.key_arn, "key_cache_seconds": 1e-6, "key_cache_messages": 1}
    )
    handlers = _handlers()

    def as_step(logical_id: str, event: dict[str, Any]) -> Any:
        with running(logical_id):
            return handlers[logical_id](event, local_aws_module.LambdaContext(logical_id))

    with workflow(local_aws, settings, monkeypatch, model=HELPER, notes=False) as flow:
        local_aws_module.add_invoke_hook(as_step)
        flow.model.script = _remember
        app = create_app(lambda: flow.services)

        async def as_api(scope: Any, receive: Any, send: Any) -> None:
            with running("ApiFunction"):
                await app(scope, receive, send)

        with TestClient(as_api, raise_server_exceptions=False) as client:
            yield flow, client, recorder, local


def test_every_request_of_every_function_is_allowed(
    template: dict[str, Any], recorded: Any
) -> None:
    from agent_memory.ports import ModelFailure
    from agent_memory.service.learning_pools import PoolRef
    from tests.conftest import ADMIN_TOKEN

    flow, client, recorder, local = recorded
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

    def call(
        method: str, url: str, body: Any = None, headers: Any = None, status: int = 200
    ) -> Any:
        answer = client.request(method, url, json=body, headers=headers or me)
        assert answer.status_code == status, f"{method} {url}: {answer.text}"
        return answer.json() if answer.content else None

    me = admin
    org = call("POST", "/v1/admin/organizations", {"name": "A"}, status=201)["id"]
    call("PATCH", f"/v1/organizations/{org}/settings", {"helperModel": HELPER})
    call("POST", "/v1/admin/users", {"organizationId": org, "id": "ana", "name": "Ana"}, status=201)
    # An admin's issuance rotates (the person's tokens are replaced); the person's own is added.
    rotated = call("POST", "/v1/admin/users/ana/tokens", {}, status=201)
    me = {"Authorization": f"Bearer {rotated['token']}"}
    spare = call("POST", "/v1/me/tokens", {}, status=201)
    me = admin
    call("DELETE", f"/v1/admin/tokens/{spare['tokenPrefix']}", status=204)
    me = {"Authorization": f"Bearer {rotated['token']}"}

    agent = call("POST", "/v1/agents", {"name": "Coder", "members": []}, status=201)["agent"]["id"]
    chat = call("POST", "/v1/sessions", {"agentId": agent, "model": HELPER}, status=201)["session"]
    turn = call(
        "POST",
        f"/v1/sessions/{chat['id']}/turns",
        {"items": [{"role": "user", "content": "Run the tests first."}]},
    )["turn"]
    assert turn["agentLearning"] == "started"
    for described in flow.wait_all():
        assert described["status"] == "SUCCEEDED"

    def refuse(request: Any) -> str:
        raise ModelFailure("config", "the helper refused", retryable=False)

    flow.model.script = refuse
    call(
        "POST",
        f"/v1/sessions/{chat['id']}/turns",
        {"items": [{"role": "user", "content": "Use lists."}]},
    )
    flow.wait_all()
    head = call("GET", f"/v1/sessions/{chat['id']}")["session"]
    remember = {
        "_tag": "Remember",
        "key": "style",
        "content": "Short answers.",
        "kind": "preference",
    }
    call(
        "POST",
        f"/v1/sessions/{chat['id']}/memory",
        {"expected": head["head"], "revision": head["revision"], "command": remember},
    )
    call("GET", f"/v1/sessions/{chat['id']}/memory")
    call("GET", f"/v1/sessions/{chat['id']}/memory/text")
    call("GET", f"/v1/sessions/{chat['id']}/learning")
    call("POST", f"/v1/sessions/{chat['id']}/fork", {}, status=201)
    held = call("GET", f"/v1/agents/{agent}/memory")
    forget = {"_tag": "Forget", "key": "tests-first"}
    call("POST", f"/v1/agents/{agent}/memory", {"expected": held["version"], "command": forget})
    call("GET", f"/v1/agents/{agent}/memory/log")
    call("GET", f"/v1/agents/{agent}/learning")
    # Seed 003: options sealed in the agent's partition, threads in THREAD# and RESOURCE#.
    options = {"workingMemory": True, "lastMessages": 5, "generateTitle": {"model": HELPER}}
    call("PATCH", f"/v1/agents/{agent}/draft", {"memory": {"options": options}})
    # The first answer titles the thread in the background (LoadEvidence, ApplyLearning).
    flow.model.script = lambda request: '{"title": "Greetings"}'
    call("POST", f"/v1/agents/{agent}/publish", {}, status=201)
    call("POST", f"/v1/agents/{agent}/versions/1/activate", {})
    thread = call("POST", "/v1/threads", {"agentId": agent}, status=201)["thread"]["id"]
    said = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    call("POST", f"/v1/threads/{thread}/messages", {"messages": said})
    flow.wait_all()
    assert call("GET", f"/v1/threads/{thread}")["thread"]["title"] == "Greetings"
    call("GET", f"/v1/threads/{thread}/learning")
    flow.model.script = refuse
    call("PUT", f"/v1/threads/{thread}/working-memory", {"content": "# User"})
    call("POST", f"/v1/threads/{thread}/context", {"message": {"role": "user", "content": "?"}})
    call("GET", f"/v1/threads?agentId={agent}")
    call("GET", "/v1/events?limit=100")  # the feed: one Query of EVENTS#<org>
    call("DELETE", f"/v1/threads/{thread}/messages/last")
    memory = call(
        "POST",
        "/v1/agent_memories",
        {
            "category": "fact",
            "content": "Ships express.",
            "entity": {"type": "account", "id": "cus_42"},
        },
        status=201,
    )
    call("GET", "/v1/agent_memories?category=fact")
    call("POST", "/v1/agent_memories/recall", {"entity": "cus_42", "limit": 5})
    call("PATCH", f"/v1/agent_memories/{memory['id']}", {"content": "Ships by air."})
    call("DELETE", f"/v1/agent_memories/{memory['id']}")
    with running("ApiFunction"):  # what a confide does through the service (no route yet)
        pool = PoolRef("session", org, chat["id"])
        assert (
            flow.learning.wait(pool, event=f"turn:{org}:{chat['id']}:9", reason="confide", upto=2)
            == "waiting"
        )
        flow.learning.release(f"turn:{org}:{chat['id']}:9")
    flow.wait_all()

    _walk_bots(call, flow, admin, org)
    # Erasing Ana reaches every pool of hers: her agent, sessions, threads, chats, bots.
    erased = call("POST", f"/v1/organizations/{org}/users/ana/erase", headers=admin)
    assert (erased["agents"], erased["chats"]) == (1, 2), erased  # a private and a group chat
    # A service key, then the organization's deletion with everything in it (ADR 0086).
    call("POST", f"/v1/organizations/{org}/service-keys", {"name": "b"}, headers=admin, status=201)
    call("GET", "/v1/admin/organizations", headers=admin)
    deleted = call("DELETE", f"/v1/admin/organizations/{org}", headers=admin)["deleted"]
    assert (deleted["organizations"], deleted["serviceKeys"]) == (1, 1), deleted

    # The scenario wrote every partition the policies grant writes on: nothing is untested.
    written = {
        f: {r.context["dynamodb:LeadingKeys"][0].split("#")[0] for r in found if r.action in WRITES}
        for f, found in recorder.requests.items()
    }
    assert written == {
        "ApiFunction": {"ORG", "USER", "USERID", "TOKEN", "TOKENPREFIX", "AGENT", "SESSION"}
        | {"AMEM", "LEARN", "WAIT", "RATE", "THREAD", "RESOURCE", "EVENTS", "AGENTS", "SESSIONS"}
        | {"BOT", "BOTS", "BOTMEM", "CHANNEL", "CHAT", "ORGS", "CHANNELS", "SKEY"},
        "LoadEvidenceFunction": {"LEARN"},
        # The memory Bot's spend (BOT#<id>/SPEND#<period>) is charged where the model answers.
        "CallModelFunction": {"LEARN", "BOT"},
        "ApplyLearningFunction": {"AGENT", "SESSION", "LEARN", "THREAD", "RESOURCE", "EVENTS"}
        | {"BOTMEM"},
        "RecordFailureFunction": {"LEARN", "EVENTS"},
    }
    refused = [
        f"{function}: {request}"
        for function in FUNCTIONS
        for request in recorder.requests[function]
        if not policy(template, function).allows(_on_template_arns(request, local))
    ]
    assert refused == [], "\n".join(refused)


def _lines(request: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in request.user.splitlines() if line.startswith("{")]


def _memory_bot(request: Any) -> str:
    """The memory Bot's model: an answer to a confide, a rewrite with every entry shown, and
    a fact on the person's words with a topic rename (a change of the pool's head row)."""
    if request.task == "confide_answer":
        return json.dumps({"answer": "I hear you. Tell the person plainly."})
    if request.task == "enrichment":
        used = [entry["id"] for entry in _lines(request)]
        return json.dumps({"input": "Book my usual trip; I travel light.", "used": used})
    if request.task == "learning_changes":
        person = next(line["id"] for line in _lines(request) if line.get("role") == "user")
        fact = {"op": "fact", "content": "Ana books trips.", "topics": ["trip"]}
        rename = {"op": "renameTopic", "from": "trip", "to": "travel"}
        return json.dumps({"changes": [fact | {"sources": [person]}, rename]})
    return _remember(request)


def _walk_bots(call: Callable[..., Any], flow: Any, admin: Mapping[str, str], org: str) -> None:
    """Seed 002 as a person walks it: a bot with a grant and a link, a channel, a private and
    a group chat, turns with the bot's words and an App result, enrichment, confide, the
    learning through the real state machine (a fact and a topic rename), every bot memory
    route, the memory Bot's settings, a refused share, Forget, history deletion, purge."""
    ben = call(
        "POST",
        "/v1/admin/users",
        {"organizationId": org, "id": "ben", "name": "Ben"},
        headers=admin,
        status=201,
    )
    other = call("POST", "/v1/admin/organizations", {"name": "B"}, headers=admin, status=201)["id"]
    call(
        "POST",
        "/v1/admin/users",
        {"organizationId": other, "id": "olga", "name": "Olga"},
        headers=admin,
        status=201,
    )
    call("PATCH", f"/v1/organizations/{org}/settings", {"botMemoryModel": HELPER}, headers=admin)
    flow.model.script = _memory_bot
    grants = {"grants": {"ben": "read"}}
    bot = call("POST", "/v1/bots", {"name": "Helper", **grants}, status=201)["bot"]["id"]
    call("GET", f"/v1/bots/{bot}")
    link = {"organizationId": other, "grants": {"olga": "read"}}
    call("POST", f"/v1/bots/{bot}/links", link, status=201)
    team = {"name": "team", "members": ["ben"]}
    channel = call("POST", "/v1/channels", team, status=201)["channel"]["id"]
    call("POST", f"/v1/channels/{channel}/members", {"add": ["ben"]})
    settings = {
        "expected": 0,
        "instructions": "Decisions of the team may be shared with the team.",
        "concurrency": 2,
        "budget": {"period": "month", "limitMicros": 5_000_000},
    }
    call("PATCH", f"/v1/bots/{bot}/memory/bot", settings)
    call("GET", f"/v1/bots/{bot}/memory/bot")
    remember = {"_tag": "Remember", "content": "I travel light.", "tags": ["packing"]}
    pinned = call("POST", f"/v1/bots/{bot}/memory", {"command": remember})["entry"]["id"]
    private = call("POST", "/v1/chats", {"botId": bot}, status=201)["chat"]["id"]
    started = call("POST", f"/v1/chats/{private}/turns", {"input": "Book my trip."}, status=201)
    assert started["enriched"] is True
    turn_id = started["turn"]["id"]
    said = [
        {"role": "assistant", "content": "Booked the 8:10 train."},
        {"role": "tool", "content": "confirmed", "app": "booking"},
    ]
    call("POST", f"/v1/chats/{private}/turns/{turn_id}/items", {"items": said})
    call("POST", f"/v1/chats/{private}/turns/{turn_id}/confide", {"text": "I was unsure."})
    call("POST", f"/v1/chats/{private}/turns/{turn_id}/complete", {})
    flow.wait_all()
    [learned] = call("GET", f"/v1/bots/{bot}/learning")["executions"]
    assert learned["status"] == "succeeded", learned
    assert [a["op"] for a in learned["applied"]] == ["fact", "renameTopic"], learned
    group_chat = {"botId": bot, "channelId": channel}
    group = call("POST", "/v1/chats", group_chat, status=201)["chat"]["id"]
    call("POST", f"/v1/chats/{group}/turns", {"input": "What is on?", "notice": True}, status=201)
    call("GET", f"/v1/chats/{private}/items")
    call("GET", f"/v1/chats/{private}/confessions")
    call("GET", f"/v1/chats/{private}/enrichments")
    [fact] = call("GET", f"/v1/bots/{bot}/memory?tags=travel")["entries"]
    log = call("GET", f"/v1/bots/{bot}/memory/log?limit=1")["changes"]
    call("GET", f"/v1/bots/{bot}/memory/log?before={log[0]['version']}")
    call("POST", f"/v1/bots/{bot}/memory/context", {"chatId": private, "maxLength": 2000})
    widen = {"id": fact["id"], "audience": f"for:channel:{channel}"}
    call("POST", f"/v1/bots/{bot}/memory/share", widen, status=409)
    call("POST", f"/v1/bots/{bot}/memory", {"command": {"_tag": "Forget", "id": pinned}})
    as_ben = {"Authorization": f"Bearer {ben['token']}"}
    call("GET", f"/v1/bots/{bot}/memory", headers=as_ben)
    call("DELETE", f"/v1/chats/{private}/items", status=204)
    assert call("POST", f"/v1/bots/{bot}/memory/purge", {"tag": f"chat:{private}"}) == {
        "removed": 1
    }


def _on_template_arns(request: Request, local: Any) -> Request:
    """The request with the embedded AWS's key ARN read as the template's."""
    return Request(
        request.action, request.resource.replace(local.key_arn, KEY_ARN), request.context
    )
