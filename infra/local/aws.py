"""The embedded AWS: moto's DynamoDB, KMS, Step Functions (executing) and Lambda.

The table, the key and the state machine are created from `template.yaml` (and the ASL file
it names), so what runs locally cannot drift from what is deployed. Lambda tasks of the
state machine are dispatched to the in-process handlers named by the template.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
REGION = "us-east-1"
ACCOUNT = "123456789012"
TABLE_NAME = "agent-memory"
KEY_ALIAS = "alias/agent-memory-local"
STATE_MACHINE_NAME = "agent-memory-learning"
MOTO_CONFIG: dict[str, Any] = {
    "stepfunctions": {"execute_state_machine": True},
    "lambda": {"use_docker": False},
    "core": {"reset_boto3_session": False},
}


@dataclass(frozen=True)
class LocalAws:
    """What `provision` created: the values the service's settings need."""

    table_name: str
    key_arn: str
    key_alias: str
    state_machine_arn: str

    def environment(self) -> dict[str, str]:
        return {
            "TABLE_NAME": self.table_name,
            "KMS_KEY_ID": self.key_alias,
            "STATE_MACHINE_ARN": self.state_machine_arn,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
        }


def fake_credentials() -> None:
    """moto accepts any credentials; never let a local run reach a real account."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }.items():
        os.environ[name] = value


@functools.cache
def template() -> dict[str, Any]:
    """The parsed template.yaml (read once per process)."""
    from infra.cfn_yaml import load_template

    return load_template(TEMPLATE)


def _resources(kind: str) -> dict[str, dict[str, Any]]:
    return {
        name: resource
        for name, resource in template()["Resources"].items()
        if resource["Type"] == kind
    }


def _only(kind: str) -> tuple[str, dict[str, Any]]:
    found = _resources(kind)
    if len(found) != 1:
        raise RuntimeError(f"template.yaml must define exactly one {kind}, not {len(found)}")
    return next(iter(found.items()))


def function_arn(logical_id: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{logical_id}"


# --- Provisioning from the template -----------------------------------------------------


def create_table(session: Any, table_name: str = TABLE_NAME) -> str:
    _, table = _only("AWS::DynamoDB::Table")
    props = table["Properties"]
    request: dict[str, Any] = {
        "TableName": table_name,
        "KeySchema": props["KeySchema"],
        "AttributeDefinitions": props["AttributeDefinitions"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if props.get("GlobalSecondaryIndexes"):
        request["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    client = session.client("dynamodb")
    client.create_table(**request)
    ttl = props.get("TimeToLiveSpecification")
    if ttl and ttl.get("Enabled"):
        client.update_time_to_live(
            TableName=table_name,
            TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
        )
    return table_name


def create_key(session: Any, alias: str = KEY_ALIAS) -> str:
    _, key = _only("AWS::KMS::Key")
    props = key["Properties"]
    kms = session.client("kms")
    created = kms.create_key(
        Description=str(props.get("Description", "agent-memory content key")),
        KeyUsage=props.get("KeyUsage", "ENCRYPT_DECRYPT"),
        KeySpec=props.get("KeySpec", "SYMMETRIC_DEFAULT"),
    )["KeyMetadata"]
    if props.get("EnableKeyRotation"):
        kms.enable_key_rotation(KeyId=created["KeyId"])
    kms.create_alias(AliasName=alias, TargetKeyId=created["KeyId"])
    return str(created["Arn"])


def state_machine_definition() -> tuple[str, str]:
    """(name, definition) of the learning state machine, substituted for local ARNs."""
    _, machine = _only("AWS::Serverless::StateMachine")
    props = machine["Properties"]
    definition = (ROOT / props["DefinitionUri"]).read_text()
    for placeholder, value in (props.get("DefinitionSubstitutions") or {}).items():
        logical_id = _referenced_resource(value)
        definition = definition.replace("${" + placeholder + "}", function_arn(logical_id))
    name = props.get("Name")
    return (name if isinstance(name, str) else STATE_MACHINE_NAME), definition


def _referenced_resource(value: Any) -> str:
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        return str(target[0] if isinstance(target, list) else target.split(".")[0])
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    raise RuntimeError(f"cannot resolve a definition substitution: {value!r}")


def state_machine_type() -> str:
    """The learning state machine's workflow type in template.yaml (STANDARD or EXPRESS):
    moto runs either through StartExecution, with Standard's name rules for both."""
    _, machine = _only("AWS::Serverless::StateMachine")
    return str(machine["Properties"].get("Type", "STANDARD"))


def create_state_machine(session: Any) -> str:
    name, definition = state_machine_definition()
    sfn = session.client("stepfunctions")
    created = sfn.create_state_machine(
        name=name,
        definition=definition,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/agent-memory-learning",
        type=state_machine_type(),
    )
    return str(created["stateMachineArn"])


def provision(session: Any) -> LocalAws:
    """Create the table, the key and the state machine; return the settings to use."""
    table = create_table(session)
    key_arn = create_key(session)
    machine = create_state_machine(session)
    return LocalAws(table, key_arn, KEY_ALIAS, machine)


# --- Lambda tasks dispatched in process -------------------------------------------------


@functools.cache
def lambda_handlers() -> dict[str, str]:
    """Logical id -> dotted handler path (`functions.<Handler>`) for every function."""
    handlers = {}
    for name, resource in _resources("AWS::Serverless::Function").items():
        handler = resource["Properties"].get("Handler") or (
            template().get("Globals", {}).get("Function", {}).get("Handler")
        )
        code_uri = str(resource["Properties"].get("CodeUri", "functions/")).strip("/")
        package = code_uri.replace("/", ".")
        handlers[name] = f"{package}.{handler}"
    return handlers


class LambdaContext:
    """Enough of the Lambda context object for Powertools and the handlers."""

    def __init__(self, function_name: str, timeout_s: float = 120.0) -> None:
        import time

        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = function_arn(function_name)
        self.memory_limit_in_mb = 1024
        self.aws_request_id = uuid.uuid4().hex
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        import time

        return max(0, int((self._deadline - time.monotonic()) * 1000))


Invoker = Callable[[str, dict[str, Any]], Any]
_invoke_hooks: list[Invoker] = []


def add_invoke_hook(hook: Invoker, *, first: bool = True) -> Callable[[], None]:
    """Let `hook` answer a function's invocations before the template's handler (an answer
    of None passes on): fault injection and call counting. Returns the hook's remover."""
    if first:
        _invoke_hooks.insert(0, hook)
    else:
        _invoke_hooks.append(hook)

    def remove() -> None:
        if hook in _invoke_hooks:
            _invoke_hooks.remove(hook)

    return remove


@contextmanager
def invoke_hook(hook: Invoker) -> Iterator[None]:
    """`add_invoke_hook` for the duration of a `with`."""
    remove = add_invoke_hook(hook)
    try:
        yield
    finally:
        remove()


def clear_invoke_hooks() -> None:
    _invoke_hooks.clear()


def _dispatch(function_name: str, event: dict[str, Any]) -> Any:
    logical_id = function_name.rsplit(":", 1)[-1]
    for hook in _invoke_hooks:  # tests may intercept a function (fault injection)
        result = hook(logical_id, event)
        if result is not None:
            return result
    dotted = lambda_handlers()[logical_id]
    module_name, _, attribute = dotted.rpartition(".")
    handler = getattr(importlib.import_module(module_name), attribute)
    return handler(event, LambdaContext(logical_id))


def dispatch_lambda_in_process() -> None:
    """Make moto's docker-less Lambda run the template's handlers in this process."""
    from moto.awslambda_simple.models import LambdaSimpleBackend

    if getattr(LambdaSimpleBackend.invoke, "_agent_memory", False):
        return

    def invoke(
        self: Any,
        function_name: str,
        qualifier: str | None,
        body: Any,
        headers: Any,
        response_headers: Any,
    ) -> bytes:
        event = json.loads(body) if body else {}
        try:
            result = _dispatch(function_name, event)
        except Exception as error:
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps(
                {"errorType": type(error).__name__, "errorMessage": str(error)}
            ).encode()
        return json.dumps(result).encode()

    invoke._agent_memory = True  # type: ignore[attr-defined]
    LambdaSimpleBackend.invoke = invoke  # type: ignore[method-assign]


# --- DynamoDB's per-item atomicity ------------------------------------------------------

# Held by every moto DynamoDB operation; a test holds it to read or change moto's tables directly.
DYNAMODB_LOCK = threading.RLock()


def make_dynamodb_atomic() -> None:
    """Serialize moto's DynamoDB operations: DynamoDB checks a condition and writes
    atomically, moto does not guard that against concurrent threads."""
    from moto.dynamodb.models import DynamoDBBackend

    for name in (
        "put_item",
        "get_item",
        "query",
        "scan",
        "update_item",
        "delete_item",
        "transact_write_items",
        "transact_get_items",
        "batch_get_item",
        "batch_write_item",
    ):
        method = getattr(DynamoDBBackend, name, None)
        if method is None or getattr(method, "_agent_memory", False):
            continue

        def locked(*args: Any, __method: Any = method, **kwargs: Any) -> Any:
            with DYNAMODB_LOCK:
                return __method(*args, **kwargs)

        functools.update_wrapper(locked, method)
        locked._agent_memory = True  # type: ignore[attr-defined]
        setattr(DynamoDBBackend, name, locked)


class _CopyKeepingTables:
    """moto's `copy` module, except that a whole table is not deep-copied: a transaction's
    rollback backup is the rows it touches (`make_dynamodb_rollback_rows`)."""

    def __getattr__(self, name: str) -> Any:
        import copy

        return getattr(copy, name)

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        import copy

        from moto.dynamodb.models.table import Table

        return value if isinstance(value, Table) else copy.deepcopy(value, memo)


def _touched_rows(backend: Any, transact_items: list[dict[str, Any]]) -> list[Any]:
    """(table, hash, range, a deep copy of the row or None) for every row a transaction
    names, read before it runs."""
    import copy

    from moto.dynamodb.models.dynamo_type import DynamoType

    saved: list[Any] = []
    for item in transact_items:
        op_type, op = next(iter(item.items()))
        table = backend.tables.get(op.get("TableName"))
        attributes = op.get("Item" if op_type == "Put" else "Key") or {}
        if table is None or table.hash_key_attr not in attributes:
            continue  # moto refuses it before writing anything
        hash_value = DynamoType(attributes[table.hash_key_attr])
        range_value = None
        if table.range_key_attr is not None:
            if table.range_key_attr not in attributes:
                continue
            range_value = DynamoType(attributes[table.range_key_attr])
        row = table.get_item(hash_value, range_value)
        saved.append((table, hash_value, range_value, copy.deepcopy(row)))
    return saved


def _restore(saved: list[Any]) -> None:
    # Newest first: a row named twice gets back the state read before the first write.
    for table, hash_value, range_value, row in reversed(saved):
        rows = table.items[hash_value] if range_value is not None else table.items
        key = range_value if range_value is not None else hash_value
        if row is None:
            rows.pop(key, None)
        else:
            rows[key] = row


def make_dynamodb_rollback_rows() -> None:
    """A cancelled TransactWriteItems puts back the rows it touched, as DynamoDB does, not a
    deep copy of the whole table taken before every transaction: that copy grew with the
    table (about 1 s a transaction at 5,000 rows), and under the lock above 20 concurrent
    writers queued past the client's read timeout, which answered 503.

    The backup and the rollback run under the same lock as the transaction, so no other
    writer's change can fall between them.
    """
    from moto.dynamodb import models
    from moto.dynamodb.models import DynamoDBBackend

    if getattr(DynamoDBBackend.transact_write_items, "_agent_memory_rows", False):
        return
    original = DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with DYNAMODB_LOCK:
            saved = _touched_rows(self, transact_items)
            try:
                original(self, transact_items)
            except BaseException:
                _restore(saved)
                raise

    functools.update_wrapper(transact_write_items, original)
    transact_write_items._agent_memory = True  # type: ignore[attr-defined]
    transact_write_items._agent_memory_rows = True  # type: ignore[attr-defined]
    models.copy = _CopyKeepingTables()  # type: ignore[assignment]
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


_query_partition = threading.local()


def make_dynamodb_scale() -> None:
    """Keep moto's DynamoDB proportional to what a request touches, as DynamoDB is: a
    base-table Query reads its partition, not every item of the table.

    moto's `Table.query` takes `all_items()` (the whole table, sorted), keeps the partition's
    items and sorts them again by range key. Within such a query, `all_items()` here gives
    the partition's items alone: results, order and counts are unchanged; only the
    emulator's cost is. (Nothing queries the spare index `gsi1`; such a query keeps moto's
    own path.)
    """
    from moto.dynamodb.models.table import Table

    if getattr(Table.query, "_agent_memory", False):
        return
    original_query = Table.query
    original_all_items = Table.all_items

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        # moto's backend passes the index name as the seventh argument after the hash key.
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name or hash_key is None:
            return original_query(self, hash_key, *args, **kwargs)
        _query_partition.key = hash_key
        try:
            return original_query(self, hash_key, *args, **kwargs)
        finally:
            _query_partition.key = None

    def all_items(self: Any) -> list[Any]:
        key = getattr(_query_partition, "key", None)
        if key is None or not self.range_key_attr:
            return list(original_all_items(self))
        return list(self.items.get(key, {}).values())

    query._agent_memory = True  # type: ignore[attr-defined]
    Table.query = query  # type: ignore[method-assign]
    Table.all_items = all_items  # type: ignore[method-assign]


def check_definitions_once() -> None:
    """moto checks a state machine's definition by parsing it (half a second for ours);
    a definition found valid stays valid, so each is checked once per process (every
    embedded AWS a test makes creates the same state machine)."""
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original = StepFunctionsParserBackend._validate_definition
    if getattr(original, "_agent_memory", False):
        return
    valid: set[str] = set()

    def validate(definition: str) -> None:
        if definition not in valid:
            original(definition=definition)
            valid.add(definition)

    validate._agent_memory = True  # type: ignore[attr-defined]
    StepFunctionsParserBackend._validate_definition = staticmethod(validate)  # type: ignore[method-assign]


def reuse_one_signing_key() -> None:
    """moto makes an RSA private key for every KMS key, symmetric ones too, so that it can
    sign; that takes about as long as the rest of a test's AWS. The service's keys only
    encrypt and decrypt (nothing signs), so a symmetric key gets one private key made once
    per process; any other key spec gets its own as before."""
    import moto.kms.models as kms_models

    original = kms_models.generate_private_key  # type: ignore[attr-defined]
    if getattr(original, "_agent_memory", False):
        return
    shared: list[Any] = []

    def generate(key_spec: str) -> Any:
        if key_spec != "SYMMETRIC_DEFAULT":
            return original(key_spec)
        if not shared:
            shared.append(original(key_spec))
        return shared[0]

    generate._agent_memory = True  # type: ignore[attr-defined]
    kms_models.generate_private_key = generate  # type: ignore[attr-defined]


@functools.cache
def _first_session() -> Any:
    """The parts of a botocore session every later one copies: the parsed service models
    (a fresh session parses each service's JSON again, a third of a second a client) and
    the built-in event handlers (registering them inspects some 1,300 functions). Made after
    moto is imported, so its handler is among them."""
    import botocore.session

    return botocore.session.get_session()


def session(region: str = REGION) -> Any:
    """A fresh boto3 session (events a test registers stay in it) that copies the first
    session's models and handlers instead of building them again."""
    import boto3
    import botocore.session

    first = _first_session()
    core = botocore.session.Session(
        event_hooks=copy.copy(first._original_handler), include_builtin_handlers=False
    )
    core.register_component("data_loader", first.get_component("data_loader"))
    return boto3.session.Session(botocore_session=core, region_name=region)


def mock_boto_only() -> None:
    """The service reaches AWS through boto3 alone, which moto answers in botocore. moto also
    registers every AWS URL (some 6,400 patterns) with a mock of the `requests` library each
    time a mock starts, for clients that call AWS over `requests`: there are none here.
    Once patched, no mock of this process starts it, so a `requests` call to AWS would not
    be refused by moto; the service makes none."""
    from moto.core import models

    enable = models.MockAWS._enable_patching
    if getattr(enable, "_agent_memory", False):
        return

    def boto_only(self: Any, reset: bool = True) -> None:
        models.botocore_stubber.enabled = True
        if reset:
            self.reset()

    boto_only._agent_memory = True  # type: ignore[attr-defined]
    models.MockAWS._enable_patching = boto_only  # type: ignore[method-assign]


_PLAIN_TYPES = {"S", "N", "BOOL", "NULL", "SS", "NS"}


def _plain(value: Any) -> bool:
    """An AttributeValue moto already holds as its JSON answer: one type, no binary (which
    moto's serializer encodes), maps and lists of such values."""
    if not isinstance(value, dict) or len(value) != 1:
        return False
    ((kind, inner),) = value.items()
    if kind in _PLAIN_TYPES:
        return True
    if kind == "M":
        return isinstance(inner, dict) and all(_plain(v) for v in inner.values())
    if kind == "L":
        return isinstance(inner, list) and all(_plain(v) for v in inner)
    return False


def attribute_values_as_they_are() -> None:
    """moto's JSON serializer walks every DynamoDB attribute value member by member against
    the service model (a quarter of an API test's time); a value already in its JSON form
    is copied as it is, anything else goes the serializer's way."""
    from moto.core.serialize import BaseJSONSerializer

    original = BaseJSONSerializer._serialize_type_structure
    if getattr(original, "_agent_memory", False):
        return

    def serialize(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if key and shape.name == "AttributeValue" and _plain(value):
            self._default_serialize(serialized, copy.deepcopy(value), shape, key)
        else:
            original(self, serialized, value, shape, key)

    serialize._agent_memory = True  # type: ignore[attr-defined]
    BaseJSONSerializer._serialize_type_structure = serialize  # type: ignore[method-assign]


def prepare_moto() -> None:
    fake_credentials()
    reuse_one_signing_key()
    check_definitions_once()
    make_dynamodb_atomic()
    make_dynamodb_rollback_rows()
    make_dynamodb_scale()
    dispatch_lambda_in_process()


@contextmanager
def embedded_aws() -> Iterator[Any]:
    """In-process moto (no HTTP) for tests: yields a boto3 session."""
    import boto3
    from moto import mock_aws

    prepare_moto()
    mock_boto_only()
    attribute_values_as_they_are()
    # moto's own executors (Step Functions calling Lambda) use boto3's default session: one
    # made before moto was imported lacks moto's handler and would call AWS for real.
    boto3.DEFAULT_SESSION = None
    with mock_aws(config=MOTO_CONFIG):
        boto3.DEFAULT_SESSION = session()
        yield session()


def start_server(port: int, host: str = "127.0.0.1") -> Any:
    """moto as an HTTP server in this process (for `make run` and `make aws-local`)."""
    import logging

    from moto.core.config import default_user_config
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log line per AWS call
    prepare_moto()
    for section, values in MOTO_CONFIG.items():
        default_user_config.setdefault(section, {}).update(values)
    # Calls made inside an execution go to MOTO_PORT (default 5000) unless told.
    os.environ["MOTO_PORT"] = str(port)
    server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    server.start()
    os.environ["AWS_ENDPOINT_URL"] = f"http://{host}:{port}"
    return server
