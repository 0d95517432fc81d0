"""Ports: what services need from the outside world, as Protocols (contracts in tests/contracts/).

A `Record` is a plain dict of Python values with string keys `pk` and `sk`: a key-value row,
not a DynamoDB item; the adapter owns the translation. Import `ports.vectors` directly.
"""

from agent_memory.ports.crypto import Cipher
from agent_memory.ports.models import (
    LearningModel,
    ModelCatalog,
    ModelErrorKind,
    ModelFailure,
    ModelReply,
    Usage,
)
from agent_memory.ports.runtime import Clock, Execution, Ids, Orchestrator
from agent_memory.ports.store import (
    Absent,
    AbsentOrLessThan,
    Action,
    AtMost,
    Check,
    Condition,
    Delete,
    Equals,
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
    "Absent",
    "AbsentOrLessThan",
    "Action",
    "AtMost",
    "Check",
    "Cipher",
    "Clock",
    "Condition",
    "Delete",
    "Equals",
    "Execution",
    "Ids",
    "KeyRange",
    "LearningModel",
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
