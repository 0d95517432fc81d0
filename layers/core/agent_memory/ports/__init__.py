"""Ports: what services need from the outside world, as Protocols.

Adapters (DynamoDB, KMS, Step Functions, models) implement them; the in-memory fakes in
`adapters/in_memory.py` implement the same contracts for unit tests. One module a port:
`store` (the single table), `crypto` (the cipher), `models` (model tasks), `runtime`
(clock, ids, the orchestrator), `vectors` (embeddings and the vector index: import
`agent_memory.ports.vectors`). Each port has one contract suite in tests/contracts/.

A `Record` is a plain dict of Python values (str, int, float, bool, None, bytes, list,
dict) with string keys `pk` and `sk`. It is a key-value row, not a DynamoDB item: the
adapter owns the translation.
"""

from agent_memory.ports.crypto import Cipher
from agent_memory.ports.models import (
    EvidenceItem,
    KnownEntry,
    LearningModel,
    LearningRequest,
    ModelCatalog,
    ModelErrorKind,
    ModelFailure,
    ModelReply,
    Usage,
)
from agent_memory.ports.runtime import Clock, Execution, Ids, Orchestrator
from agent_memory.ports.store import (
    WRITER_ATTRIBUTE,
    Absent,
    AbsentOrAtMost,
    AbsentOrEquals,
    AbsentOrLessThan,
    Action,
    AtLeast,
    AtMost,
    Check,
    Condition,
    Delete,
    Equals,
    GreaterThan,
    KeyRange,
    LessThan,
    Page,
    Present,
    Put,
    Record,
    Store,
    Update,
)

__all__ = [
    "WRITER_ATTRIBUTE",
    "Absent",
    "AbsentOrAtMost",
    "AbsentOrEquals",
    "AbsentOrLessThan",
    "Action",
    "AtLeast",
    "AtMost",
    "Check",
    "Cipher",
    "Clock",
    "Condition",
    "Delete",
    "Equals",
    "EvidenceItem",
    "Execution",
    "GreaterThan",
    "Ids",
    "KeyRange",
    "KnownEntry",
    "LearningModel",
    "LearningRequest",
    "LessThan",
    "ModelCatalog",
    "ModelErrorKind",
    "ModelFailure",
    "ModelReply",
    "Orchestrator",
    "Page",
    "Present",
    "Put",
    "Record",
    "Store",
    "Update",
    "Usage",
]
