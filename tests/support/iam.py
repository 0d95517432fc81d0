"""The template's IAM policies evaluated as AWS would for one request: a function's policy,
requests on rows and sealed fields, the deployment's ARNs."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


FUNCTIONS = (
    "ApiFunction",
    "LoadEvidenceFunction",
    "CallModelFunction",
    "ApplyLearningFunction",
    "RecordFailureFunction",
)


STEPS = FUNCTIONS[1:]


# The other API family functions (api/families.py): each has exactly ApiFunction's policy, so
# every ApiFunction test here holds for them.
API_FAMILY_FUNCTIONS = (
    "ApiAgentsFunction",
    "ApiSessionsFunction",
    "ApiAgentMemoriesFunction",
    "ApiBotsFunction",
    "ApiChatsFunction",
    "ApiThreadsFunction",
    "ApiDocsFunction",
)


ACCOUNT = "123456789012"


REGION = "us-east-1"


# The embedded AWS's names (infra/local/aws.py): the stack is "agent-memory".
TABLE = "agent-memory"


TABLE_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{TABLE}"


KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/0d9f6a52-0000-4000-8000-000000000001"


MACHINE_ARN = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:agent-memory-learning"


SECRET_ARN = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:openai-key-AbCdEf"


WRITES = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")


def resolve(value: Any, names: Mapping[str, Any], conditions: Mapping[str, bool]) -> Any:
    """CloudFormation intrinsics over known `names` (Refs and `Res.Attr`); AWS::NoValue
    drops the element it stands for."""
    if isinstance(value, list):
        items = [resolve(v, names, conditions) for v in value]
        return [v for v in items if v is not _NO_VALUE]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"}:
        return _NO_VALUE if value["Ref"] == "AWS::NoValue" else names[value["Ref"]]
    if set(value) == {"Fn::GetAtt"}:
        resource, attribute = value["Fn::GetAtt"]
        return names[f"{resource}.{attribute}"]
    if set(value) == {"Fn::Sub"}:
        text = value["Fn::Sub"]
        assert isinstance(text, str), "only the one-argument Fn::Sub is used"
        return re.sub(r"\$\{([^}]+)\}", lambda m: str(names[m.group(1)]), text)
    if set(value) == {"Fn::Join"}:
        delimiter, parts = value["Fn::Join"]
        assert isinstance(delimiter, str)
        return delimiter.join(str(p) for p in _flat(resolve(parts, names, conditions)))
    if set(value) == {"Fn::Split"}:
        delimiter, text = value["Fn::Split"]
        return str(resolve(text, names, conditions)).split(delimiter)
    if set(value) == {"Fn::If"}:
        condition, yes, no = value["Fn::If"]
        return resolve(yes if conditions[condition] else no, names, conditions)
    return {k: resolve(v, names, conditions) for k, v in value.items()}


_NO_VALUE = object()


def _flat(parts: Any) -> list[Any]:
    flat: list[Any] = []
    for part in parts:
        flat += part if isinstance(part, list) else [part]
    return flat


VECTOR_INDEX_ARN = (
    f"arn:aws:s3vectors:{REGION}:{ACCOUNT}:bucket/agent-memory-vectors/index/messages-1024"
)


@dataclass(frozen=True)
class Deployment:
    """The template's names for one set of parameter values."""

    parameters: Mapping[str, str] = field(default_factory=dict)

    def names(self) -> dict[str, Any]:
        params = {"AllowedModels": "anthropic.claude", "OpenAIApiKeySecretArn": ""}
        params |= self.parameters
        return {
            "AWS::Partition": "aws",
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::StackName": "agent-memory",
            "AWS::URLSuffix": "amazonaws.com",
            "MemoryTable": TABLE,
            "MemoryTable.Arn": TABLE_ARN,
            "MemoryKey.Arn": KEY_ARN,
            "MessageVectorIndex": VECTOR_INDEX_ARN,
            **{k: v for k, v in params.items() if k != "AllowedModels"},
            "AllowedModels": params["AllowedModels"].split(","),
        }

    def conditions(self) -> dict[str, bool]:
        return {
            "HasOpenAIApiKeySecret": bool(self.parameters.get("OpenAIApiKeySecretArn")),
            "HasAlarmTopic": False,
            "HasApiReservedConcurrency": False,
            "HasLearningReservedConcurrency": False,
        }


def policy(template: dict[str, Any], function: str, deployment: Deployment | None = None) -> Policy:
    """Every statement of the function's inline policies and of the template's managed
    policies it names (`!Ref ApiPolicy`), resolved."""
    deployment = deployment or Deployment()
    found: list[dict[str, Any]] = []
    for listed in template["Resources"][function]["Properties"]["Policies"]:
        document = listed
        if set(listed) == {"Ref"} and listed["Ref"] in template["Resources"]:
            managed = template["Resources"][listed["Ref"]]
            assert managed["Type"] == "AWS::IAM::ManagedPolicy", listed
            assert set(managed["Properties"]) == {"Description", "PolicyDocument"}, "no Roles"
            document = {"Statement": managed["Properties"]["PolicyDocument"]["Statement"]}
        resolved = resolve(document, deployment.names(), deployment.conditions())
        if resolved is not _NO_VALUE:
            assert set(resolved) == {"Statement"}, f"{function}: only inline statements"
            found += resolved["Statement"]
    return Policy(function, found)


@dataclass(frozen=True)
class Request:
    """One authorization request: an action on a resource, with its condition keys."""

    action: str
    resource: str
    context: Mapping[str, str | Sequence[str]] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.action} on {self.resource} {dict(self.context)}"


def _glob(pattern: str, value: str, *, case: bool = True) -> bool:
    """IAM's wildcards: `*` any run of characters (`:` and `/` too), `?` one character."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, 0 if case else re.IGNORECASE) is not None


_MATCH: dict[str, Callable[[str, str], bool]] = {
    "StringEquals": lambda pattern, value: pattern == value,
    "StringLike": _glob,
    "ArnLike": _glob,
    "Bool": lambda pattern, value: pattern.lower() == value.lower(),
}


@dataclass(frozen=True)
class Policy:
    function: str
    statements: list[dict[str, Any]]

    def allows(self, request: Request) -> bool:
        """Denied by any matching Deny, else allowed by any matching Allow (IAM's order)."""
        matching = [s for s in self.statements if self._applies(s, request)]
        if any(s["Effect"] == "Deny" for s in matching):
            return False
        return any(s["Effect"] == "Allow" for s in matching)

    def granted(self, prefix: str) -> set[str]:
        """Every allowed action of one service (`dynamodb:`), as the policy spells it."""
        return {
            a
            for s in self.statements
            if s["Effect"] == "Allow"
            for a in _list(s["Action"])
            if a.startswith(prefix)
        }

    @staticmethod
    def _applies(statement: Mapping[str, Any], request: Request) -> bool:
        actions = _list(statement["Action"])
        if not any(_glob(a, request.action, case=False) for a in actions):
            return False
        if not any(_glob(r, request.resource) for r in _list(statement["Resource"])):
            return False
        return all(
            _holds(operator, key, expected, request.context)
            for operator, keys in statement.get("Condition", {}).items()
            for key, expected in keys.items()
        )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _holds(operator: str, key: str, expected: Any, context: Mapping[str, Any]) -> bool:
    values = {k.lower(): v for k, v in context.items()}.get(key.lower())
    wanted = [str(e) for e in _list(expected)]
    if operator == "Null":
        [absent] = wanted
        return (values is None) == (absent == "true")
    qualifier, _, test = operator.rpartition(":")
    match = _MATCH[test]  # an operator the evaluator does not know fails the test here
    if qualifier == "ForAllValues":
        return all(any(match(w, v) for w in wanted) for v in _list(values or []))
    if qualifier == "ForAnyValue":
        return any(any(match(w, v) for w in wanted) for v in _list(values or []))
    assert qualifier == "", operator
    if values is None:
        return False
    assert isinstance(values, str), f"{key} is multivalued: {operator} needs a qualifier"
    return any(match(w, values) for w in wanted)


def item(action: str, pk: str, attributes: Sequence[str] = ()) -> Request:
    """A DynamoDB item request on the table, with its partition key (and attributes)."""
    context: dict[str, Any] = {"dynamodb:LeadingKeys": [pk]}
    if attributes:
        context["dynamodb:Attributes"] = list(attributes)
    return Request(f"dynamodb:{action}", TABLE_ARN, context)


def sealed(action: str, field_name: str, **extra: str) -> Request:
    """A KMS request of the Encryption SDK under the cipher's scope (adapters/kms.py)."""
    scope = {"org": "o-1", "pool": "s-1", "field": field_name, **extra}
    context: dict[str, Any] = {"kms:EncryptionContextKeys": list(scope)}
    context |= {f"kms:EncryptionContext:{k}": v for k, v in scope.items()}
    return Request(f"kms:{action}", KEY_ARN, context)
