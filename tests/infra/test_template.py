"""template.yaml, samconfig.toml, the sam-local env file, the layer requirements, the admin
token check at deploy and checkov's settings (offline). Each function's IAM policy:
tests/infra/test_iam.py."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from infra import admin_token, gen_layer_requirements
from infra.cfn_yaml import load_template, loads
from tests.support import iam

ROOT = Path(__file__).resolve().parents[2]
# One function per API family (api/families.py); ApiFunction also answers unclaimed paths.
API_FUNCTIONS = (iam.FUNCTIONS[0], *iam.API_FAMILY_FUNCTIONS)
FUNCTIONS = {
    **dict.fromkeys(API_FUNCTIONS, "api.handler.handler"),
    **{
        step: f"learning_steps.handler.{handler}"
        for step, handler in zip(
            iam.STEPS,
            ("load_evidence", "call_model", "apply_learning", "record_failure"),
            strict=True,
        )
    },
}
ENV_VARS = {
    "TABLE_NAME",
    "KMS_KEY_ID",
    "STATE_MACHINE_ARN",
    "DEFAULT_MODEL",
    "MEMORY_ADMIN_TOKEN_SHA256",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY_SECRET_ARN",
    "MEMORY_TEXT_MAX_LENGTH",
    "POWERTOOLS_SERVICE_NAME",
    "POWERTOOLS_METRICS_NAMESPACE",
    "LOG_LEVEL",
}


@pytest.fixture(scope="module")
def resources(template: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = template["Resources"]
    return found


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements(function: dict[str, Any]) -> list[tuple[dict[str, Any], str | None]]:
    """Every IAM statement of a function (inline, or of a managed policy of the template),
    with the condition that guards it (if any)."""
    found: list[tuple[dict[str, Any], str | None]] = []
    for policy in function["Properties"].get("Policies", []):
        condition, document = None, policy
        if isinstance(policy, dict) and "Fn::If" in policy:
            condition, document, otherwise = policy["Fn::If"]
            assert otherwise == {"Ref": "AWS::NoValue"}
        if isinstance(document, dict) and set(document) == {"Ref"}:
            managed = load_template(ROOT / "template.yaml")["Resources"][document["Ref"]]
            assert managed["Type"] == "AWS::IAM::ManagedPolicy"
            document = managed["Properties"]["PolicyDocument"]
        if isinstance(document, dict) and "Statement" in document:
            found += [(s, condition) for s in document["Statement"]]
    return found


def alarms(resources: dict[str, Any]) -> list[dict[str, Any]]:
    return [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]


# ------------------------------------------------------------------ table and key


def test_table_keys_index_ttl_and_recovery(resources: dict[str, Any]) -> None:
    table = resources["MemoryTable"]
    assert table["Type"] == "AWS::DynamoDB::Table"
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"
    props = table["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    assert types == {"pk": "S", "sk": "S", "gsi1pk": "S", "gsi1sk": "S"}
    [index] = props["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "gsi1"
    assert index["KeySchema"] == [
        {"AttributeName": "gsi1pk", "KeyType": "HASH"},
        {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
    ]
    assert index["Projection"] == {"ProjectionType": "ALL"}
    assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["SSESpecification"] == {
        "SSEEnabled": True,
        "SSEType": "KMS",
        "KMSMasterKeyId": {"Fn::GetAtt": ["MemoryKey", "Arn"]},
    }


def test_key_rotates_and_is_administered_by_the_account(resources: dict[str, Any]) -> None:
    key = resources["MemoryKey"]
    assert key["Type"] == "AWS::KMS::Key"
    assert key["Properties"]["EnableKeyRotation"] is True
    # The account administers the key and IAM policies decide who uses it (tests/infra/
    # test_iam.py); CloudWatch Logs may use it for this stack's log groups only.
    root, logs = key["Properties"]["KeyPolicy"]["Statement"]
    assert root["Principal"]["AWS"] == {
        "Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"
    }
    assert root["Action"] == "kms:*"
    assert logs["Principal"] == {"Service": {"Fn::Sub": "logs.${AWS::Region}.amazonaws.com"}}
    assert not any("*" in action for action in logs["Action"])
    [(operator, condition)] = logs["Condition"].items()
    assert operator == "ArnLike"
    [arns] = condition.values()
    assert list(condition) == ["kms:EncryptionContext:aws:logs:arn"]
    assert all(":log-group:/aws/" in arn["Fn::Sub"] for arn in arns)
    assert all("${AWS::StackName}-" in arn["Fn::Sub"] for arn in arns)
    groups = [r for r in resources.values() if r["Type"] == "AWS::Logs::LogGroup"]
    # Five learning functions, eight API family functions, MCP, the state machine, the API.
    assert len(groups) == 16
    for group in groups:
        assert group["Properties"]["KmsKeyId"] == {"Fn::GetAtt": ["MemoryKey", "Arn"]}
        name = group["Properties"]["LogGroupName"]["Fn::Sub"]
        # Each name falls under one of the key policy's patterns (functions: <stack>-...).
        assert name.startswith(("/aws/lambda/${", "/aws/vendedlogs/")), name
    alias = resources["MemoryKeyAlias"]["Properties"]
    assert alias == {
        "AliasName": {"Fn::Sub": "alias/${AWS::StackName}-memory"},
        "TargetKeyId": {"Ref": "MemoryKey"},
    }


# ------------------------------------------------------------------ functions


def test_layer_is_built_from_layers_core(resources: dict[str, Any]) -> None:
    layer = resources["CoreLayer"]
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Properties"]["ContentUri"] == "layers/core"
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.11"]
    assert layer["Metadata"]["BuildMethod"] == "python3.11"
    assert layer["Metadata"]["BuildArchitecture"] == "arm64"


@pytest.mark.parametrize(("name", "handler"), FUNCTIONS.items())
def test_function_runs_from_functions_with_the_core_layer(
    resources: dict[str, Any], name: str, handler: str
) -> None:
    function = resources[name]
    assert function["Type"] == "AWS::Serverless::Function"
    props = function["Properties"]
    assert props["CodeUri"] == "functions/"
    assert props["Handler"] == handler
    assert props["Runtime"] == "python3.11"
    assert props["Architectures"] == ["arm64"]
    assert props["Layers"] == [{"Ref": "CoreLayer"}]


def test_function_sizes_and_timeouts(resources: dict[str, Any]) -> None:
    api = resources["ApiFunction"]["Properties"]
    assert (api["MemorySize"], api["Timeout"]) == (1024, 29)
    assert resources["CallModelFunction"]["Properties"]["Timeout"] == 120
    for name in ("LoadEvidenceFunction", "ApplyLearningFunction", "RecordFailureFunction"):
        assert resources[name]["Properties"]["Timeout"] <= 30


def test_reserved_concurrency_is_a_parameter_per_function_family(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    for family in ("ApiReservedConcurrency", "LearningReservedConcurrency"):
        parameter = template["Parameters"][family]
        assert (parameter["Type"], parameter["Default"], parameter["MinValue"]) == (
            "Number",
            -1,
            -1,
        )
        assert template["Conditions"][f"Has{family}"] == {
            "Fn::Not": [{"Fn::Equals": [{"Ref": family}, "-1"]}]
        }
    for name in FUNCTIONS:
        family = (
            "ApiReservedConcurrency" if name in API_FUNCTIONS else "LearningReservedConcurrency"
        )
        assert resources[name]["Properties"]["ReservedConcurrentExecutions"] == {
            "Fn::If": [f"Has{family}", {"Ref": family}, {"Ref": "AWS::NoValue"}]
        }


def test_only_the_api_starts_learning_on_the_named_state_machine(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    name = resources["LearningStateMachine"]["Properties"]["Name"]
    assert name == {"Fn::Sub": "${AWS::StackName}-learning"}
    arn = template["Globals"]["Function"]["Environment"]["Variables"]["STATE_MACHINE_ARN"][
        "Fn::Sub"
    ]
    assert arn == (
        "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:"
        "${AWS::StackName}-learning"
    )
    for function in FUNCTIONS:
        granted = {
            a: as_list(s["Resource"])
            for s, _ in statements(resources[function])
            for a in as_list(s["Action"])
            if a.startswith("states:")
        }
        if function not in API_FUNCTIONS:
            assert granted == {}
            continue
        # Starting is all it does: a repeated start is answered by StartExecution itself.
        assert set(granted) == {"states:StartExecution"}
        assert granted["states:StartExecution"] == [{"Fn::Sub": arn}]


def test_only_call_model_invokes_bedrock(resources: dict[str, Any]) -> None:
    """Chat models in CallModel; elsewhere only semantic recall's embedding model."""
    for function in FUNCTIONS:
        found = [s for s, _ in statements(resources[function])]
        actions = {a for s in found for a in as_list(s["Action"])}
        bedrock = {a for a in actions if a.startswith("bedrock:")}
        if function == "CallModelFunction":
            assert "bedrock:InvokeModel" in bedrock  # what Converse is authorised by
            continue
        embedding = [s for s in found if s.get("Sid") == "RecallEmbeddings"]
        assert bedrock == ({"bedrock:InvokeModel"} if embedding else set())
        for statement in embedding:
            assert "amazon.titan-embed-text-v2:0" in json.dumps(statement["Resource"])


def test_openai_secret_is_readable_only_when_configured(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    assert template["Conditions"]["HasOpenAIApiKeySecret"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "OpenAIApiKeySecretArn"}, ""]}]
    }
    readers = set()
    for function in FUNCTIONS:
        for statement, condition in statements(resources[function]):
            if "secretsmanager:GetSecretValue" in as_list(statement["Action"]):
                assert condition == "HasOpenAIApiKeySecret"
                assert statement["Resource"] == {"Ref": "OpenAIApiKeySecretArn"}
                readers.add(function)
    # Read at the first model call (adapters/secrets.py): only CallModel calls models.
    assert readers == {"CallModelFunction"}


def test_environment(template: dict[str, Any]) -> None:
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert set(env) >= ENV_VARS
    assert env["TABLE_NAME"] == {"Ref": "MemoryTable"}
    assert env["KMS_KEY_ID"] == {"Fn::GetAtt": ["MemoryKey", "Arn"]}
    assert env["MEMORY_ADMIN_TOKEN_SHA256"] == {"Ref": "AdminTokenSha256"}
    assert env["POWERTOOLS_SERVICE_NAME"] == "agent-memory"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "AgentMemory"
    params = template["Parameters"]
    assert params["AdminTokenSha256"]["NoEcho"] is True
    assert params["AdminTokenSha256"]["AllowedPattern"] == "^[0-9a-f]{64}$"
    assert "Default" not in params["AdminTokenSha256"]  # a first deploy must name one
    assert params["AllowedModels"]["Type"] == "CommaDelimitedList"
    assert params["AllowedModels"]["Default"] == "anthropic.claude"
    assert env["ALLOWED_MODELS"] == {"Ref": "AllowedModelPatterns"}
    assert params["AllowedModelPatterns"]["Default"] == ""  # every configured provider
    default_model = params["DefaultModel"]["Default"].removeprefix("bedrock/")
    assert default_model.startswith(params["AllowedModels"]["Default"])  # invocable
    assert params["DefaultModel"]["Default"] == "bedrock/anthropic.claude-3-5-haiku-20241022-v1:0"
    assert params["MemoryTextMaxLength"]["Default"] == 8000
    assert params["LogLevel"]["Default"] == "INFO"
    assert params["OpenAIBaseUrl"]["Default"] == ""
    assert params["OpenAIApiKeySecretArn"]["Default"] == ""
    assert params["AlarmTopicArn"]["Default"] == ""


def test_http_api_catches_every_path(resources: dict[str, Any]) -> None:
    routes = {
        (e["Properties"]["Path"], e["Properties"]["Method"])
        for e in resources["ApiFunction"]["Properties"]["Events"].values()
        if e["Type"] == "HttpApi" and e["Properties"]["ApiId"] == {"Ref": "HttpApi"}
    }
    assert routes == {("/", "ANY"), ("/{proxy+}", "ANY")}
    api = resources["HttpApi"]
    assert api["Type"] == "AWS::Serverless::HttpApi"
    assert api["Properties"]["AccessLogSettings"]["DestinationArn"] == {
        "Fn::GetAtt": ["HttpApiAccessLogGroup", "Arn"]
    }
    json.loads(api["Properties"]["AccessLogSettings"]["Format"])  # one JSON object per request
    settings = api["Properties"]["DefaultRouteSettings"]
    assert {"ThrottlingRateLimit", "ThrottlingBurstLimit"} <= set(settings)


def test_state_machine(resources: dict[str, Any]) -> None:
    machine = resources["LearningStateMachine"]
    assert machine["Type"] == "AWS::Serverless::StateMachine"
    props = machine["Properties"]
    assert props["Type"] == "EXPRESS"
    assert props["DefinitionUri"] == "infra/statemachines/learning.asl.json"
    steps = [
        "LoadEvidenceFunction",
        "CallModelFunction",
        "ApplyLearningFunction",
        "RecordFailureFunction",
    ]
    assert props["DefinitionSubstitutions"] == {
        f"{step}Arn": {"Fn::GetAtt": [step, "Arn"]} for step in steps
    }
    invoked = [
        p["LambdaInvokePolicy"]["FunctionName"]
        for p in props["Policies"]
        if "LambdaInvokePolicy" in p
    ]
    assert invoked == [{"Ref": step} for step in steps]
    [destination] = props["Logging"]["Destinations"]
    assert destination["CloudWatchLogsLogGroup"]["LogGroupArn"] == {
        "Fn::GetAtt": ["LearningStateMachineLogGroup", "Arn"]
    }


# ------------------------------------------------------------------ alarms and outputs


def test_every_alarm_exists(resources: dict[str, Any]) -> None:
    found: set[tuple[str, str, str]] = set()
    for alarm in alarms(resources):
        if "MetricName" in alarm:
            [dimension] = alarm["Dimensions"]
            found.add((alarm["Namespace"], alarm["MetricName"], json.dumps(dimension["Value"])))
            assert alarm["Threshold"] == 0
            assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
            assert alarm["Period"] == 300
        else:  # metric math over DynamoDB's per-operation metrics
            stats = [m["MetricStat"] for m in alarm["Metrics"] if "MetricStat" in m]
            names = {s["Metric"]["MetricName"] for s in stats}
            assert len(names) == 1
            operations = set()
            for stat in stats:
                dims = {d["Name"]: d["Value"] for d in stat["Metric"]["Dimensions"]}
                assert dims["TableName"] == {"Ref": "MemoryTable"}
                operations.add(dims["Operation"])
            assert operations >= {"GetItem", "Query", "PutItem", "UpdateItem", "TransactWriteItems"}
            [total] = [m for m in alarm["Metrics"] if m.get("ReturnData")]
            assert all(
                m["Id"] in total["Expression"] for m in alarm["Metrics"] if "MetricStat" in m
            )
            found.add(("AWS/DynamoDB", names.pop(), json.dumps({"Ref": "MemoryTable"})))
        assert alarm["AlarmActions"] == {
            "Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]
        }
    expected = {
        ("AWS/Lambda", metric, json.dumps({"Ref": f}))
        for f in (*FUNCTIONS, "McpFunction")
        for metric in ("Errors", "Throttles")
    }
    machine = json.dumps({"Ref": "LearningStateMachine"})
    expected |= {
        ("AWS/States", "ExecutionsFailed", machine),
        ("AWS/States", "ExecutionsTimedOut", machine),
        ("AWS/ApiGateway", "5xx", json.dumps({"Ref": "HttpApi"})),
        ("AWS/DynamoDB", "ThrottledRequests", json.dumps({"Ref": "MemoryTable"})),
        ("AWS/DynamoDB", "SystemErrors", json.dumps({"Ref": "MemoryTable"})),
    }
    assert found == expected


def test_outputs(template: dict[str, Any]) -> None:
    assert {"ApiUrl", "TableName", "KeyArn", "StateMachineArn"} <= set(template["Outputs"])


# ------------------------------------------------------------------ generated and local files


def test_layer_requirements_are_fresh() -> None:
    path = ROOT / "layers" / "core" / "requirements.txt"
    assert path.read_text() == gen_layer_requirements.render(), (
        "layers/core/requirements.txt is stale: run `make layer-requirements`"
    )
    with (ROOT / "pyproject.toml").open("rb") as f:
        dependencies = tomllib.load(f)["project"]["dependencies"]
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    assert lines == dependencies


def test_sam_local_env_covers_every_function(template: dict[str, Any]) -> None:
    env_file = json.loads((ROOT / "infra" / "local" / "sam-local-env.json").read_text())
    declared = set(template["Globals"]["Function"]["Environment"]["Variables"])
    for scope in ["Parameters", *FUNCTIONS]:
        values = env_file[scope]
        assert values["TABLE_NAME"] == "agent-memory"
        assert values["KMS_KEY_ID"] == "alias/agent-memory-local"
        assert values["AWS_ENDPOINT_URL"] == "http://host.docker.internal:4566"
        assert values["STATE_MACHINE_ARN"] == (
            "arn:aws:states:us-east-1:123456789012:stateMachine:agent-memory-learning"
        )
        assert len(values["MEMORY_ADMIN_TOKEN_SHA256"]) == 64
        # sam local passes only variables the template declares (AWS_* credentials aside).
        assert {k for k in values if not k.startswith("AWS_")} <= declared
        assert "AWS_ENDPOINT_URL" in declared
    assert (
        env_file["Parameters"]["MEMORY_ADMIN_TOKEN_SHA256"]
        == hashlib.sha256(b"local-admin-token").hexdigest()
    )


def test_samconfig_profiles() -> None:
    with (ROOT / "samconfig.toml").open("rb") as f:
        config = tomllib.load(f)
    assert config["version"] == 0.1
    for env, stack, confirm in (
        ("default", "agent-memory-dev", False),
        ("prod", "agent-memory-prod", True),
    ):
        assert config[env]["global"]["parameters"]["stack_name"] == stack
        deploy = config[env]["deploy"]["parameters"]
        assert deploy["capabilities"] == "CAPABILITY_IAM"
        assert deploy["resolve_s3"] is True
        assert deploy["confirm_changeset"] is confirm
        assert "AdminTokenSha256" not in deploy["parameter_overrides"]  # never a secret here
    assert config["default"]["build"]["parameters"] == {"cached": True, "parallel": True}


# ------------------------------------------------------------------ the admin token at deploy

STRONG = "s" * 31 + "!"


def test_a_new_admin_token_is_strong_and_hashed_as_the_service_hashes() -> None:
    from agent_memory.domain.identity import hash_token

    token = admin_token.new_token()
    assert len(token) >= 43
    assert token != admin_token.new_token()
    assert admin_token.digest(token) == hash_token(token)
    assert admin_token.digest(STRONG) == hash_token(STRONG)


@pytest.mark.parametrize("token", ["", "local-admin-token", "s" * 31, " " + "s" * 32])
def test_a_short_or_padded_token_is_not_hashed(token: str) -> None:
    with pytest.raises(admin_token.Refused):
        admin_token.digest(token)


def _never(stack: str, region: str) -> set[str] | None:
    raise AssertionError("a deploy that names the hash needs no stack lookup")


@pytest.mark.parametrize(
    "overrides",
    [
        f"AdminTokenSha256={'A' * 64}",  # upper case: the template's pattern refuses it too
        f"AdminTokenSha256={'a' * 63}",
        "AdminTokenSha256=",
        f"AdminTokenSha256={hashlib.sha256(b'local-admin-token').hexdigest()}",
        f"AdminTokenSha256={hashlib.sha256(b'').hexdigest()} LogLevel=INFO",
        "AdminTokenSha256",
    ],
)
def test_deploy_refuses_a_malformed_or_weak_hash(overrides: str) -> None:
    with pytest.raises(admin_token.Refused):
        admin_token.check("prod", overrides, lookup=_never)


def test_deploy_refuses_a_first_deploy_without_a_hash() -> None:
    looked_up: list[tuple[str, str]] = []

    def missing(stack: str, region: str) -> set[str] | None:
        looked_up.append((stack, region))
        return None

    with pytest.raises(admin_token.Refused, match="first deploy"):
        admin_token.check("prod", 'LogLevel="INFO"', lookup=missing)
    assert looked_up == [("agent-memory-prod", "us-east-1")]
    with pytest.raises(admin_token.Refused, match="first deploy"):
        admin_token.check("default", "", lookup=lambda s, r: {"LogLevel"})


def test_deploy_accepts_a_good_hash_or_the_deployed_one() -> None:
    good = f'AdminTokenSha256={admin_token.digest(STRONG)} DefaultModel="bedrock/x y"'
    assert "new hash" in admin_token.check("prod", good, lookup=_never)
    kept = admin_token.check("default", "", lookup=lambda s, r: {"AdminTokenSha256", "LogLevel"})
    assert "keeps" in kept


def test_the_deploy_helper_answers_on_its_exit_code(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert admin_token.main(["hash"]) == 2
    assert "at least 32" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(STRONG + "\n"))
    assert admin_token.main(["hash"]) == 0
    assert capsys.readouterr().out.strip() == hashlib.sha256(STRONG.encode()).hexdigest()
    assert admin_token.main(["check", "--env", "prod", "--overrides", "AdminTokenSha256=x"]) == 2


def test_make_deploy_checks_the_hash_before_building() -> None:
    lint = (ROOT / "infra" / "lint.mk").read_text()
    assert "\ndeploy: deploy-check\n" in lint
    assert "infra/admin_token.py check --env $(ENV)" in lint


# ------------------------------------------------------------------ checkov


def test_every_skipped_checkov_check_is_recorded_in_a_decision() -> None:
    config = loads((ROOT / "infra" / "checkov.yaml").read_text())
    assert config["framework"] == ["cloudformation"]
    assert config["skip-download"] is True  # offline
    decisions = "".join(p.read_text() for p in (ROOT / "docs" / "adr").glob("*.md"))
    for check in config["skip-check"]:
        assert check in decisions, f"{check} is skipped without a recorded reason"


# ------------------------------------------------------------------ the loader itself


def test_loader_turns_short_tags_into_long_forms() -> None:
    doc = loads(
        """
A: !Ref X
B: !GetAtt Res.Attr.Deep
C: !GetAtt [Res, Attr]
D: !Sub "x-${AWS::StackName}"
E: !Sub ["${a}", {a: !Ref Y}]
F: !If [Cond, !Join ["", [a, b]], !Ref AWS::NoValue]
G: !Not [!Equals [!Ref P, ""]]
H: !Condition Other
I: !Select [0, !GetAZs ""]
Version: 2012-10-17
"""
    )
    assert doc["A"] == {"Ref": "X"}
    assert doc["B"] == {"Fn::GetAtt": ["Res", "Attr.Deep"]}
    assert doc["C"] == {"Fn::GetAtt": ["Res", "Attr"]}
    assert doc["D"] == {"Fn::Sub": "x-${AWS::StackName}"}
    assert doc["E"] == {"Fn::Sub": ["${a}", {"a": {"Ref": "Y"}}]}
    assert doc["F"] == {"Fn::If": ["Cond", {"Fn::Join": ["", ["a", "b"]]}, {"Ref": "AWS::NoValue"}]}
    assert doc["G"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "P"}, ""]}]}
    assert doc["H"] == {"Condition": "Other"}
    assert doc["I"] == {"Fn::Select": [0, {"Fn::GetAZs": ""}]}
    assert doc["Version"] == "2012-10-17"
