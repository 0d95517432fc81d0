"""The part of the Amazon States Language that the local workflow runner executes.

`Machine.parse` refuses, naming it, anything it would not run exactly as Step Functions does:
JSONPath only; `Task`, `Choice` (`IsPresent` rules, `Default`), `Succeed` and `Fail` states;
`Parameters`, `ResultPath`, `TimeoutSeconds`, `Retry` (without `MaxDelaySeconds`) and `Catch`
per state. The language's rules are here (the next state, paths, what Retry and Catch make of
an error); the runner (`local_orchestrator.py`) only follows them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ALL = "States.ALL"
TASK_FAILED = "States.TaskFailed"
TIMEOUT = "States.Timeout"
RUNTIME = "States.Runtime"
# What a crashed Lambda runtime reports; the runner reports a step cut short by a restart so.
CRASHED = "Lambda.Unknown"

_MACHINE_FIELDS = {"Comment", "StartAt", "States", "TimeoutSeconds", "QueryLanguage", "Version"}
_COMMON = {"Type", "Comment", "Next", "End"}
_STATE_FIELDS = {
    "Task": _COMMON | {"Resource", "Parameters", "ResultPath", "TimeoutSeconds", "Retry", "Catch"},
    "Choice": {"Type", "Comment", "Choices", "Default"},
    "Succeed": {"Type", "Comment"},
    "Fail": {"Type", "Comment", "Error", "Cause"},
}
_RETRY_FIELDS = {"ErrorEquals", "IntervalSeconds", "BackoffRate", "MaxAttempts"}
_CATCH_FIELDS = {"ErrorEquals", "Next", "ResultPath"}
_CHOICE_FIELDS = {"Variable", "IsPresent", "Next"}


class DefinitionError(ValueError):
    """The definition uses something the local runner does not execute (or is malformed)."""


@dataclass(frozen=True)
class Retrier:
    errors: tuple[str, ...]
    interval_s: float = 1.0
    backoff: float = 2.0
    max_attempts: int = 3


@dataclass(frozen=True)
class Catcher:
    errors: tuple[str, ...]
    next: str
    result_path: str | None = "$"


@dataclass(frozen=True)
class State:
    name: str
    type: str
    next: str | None = None
    resource: str | None = None
    parameters: Any = None
    result_path: str | None = "$"
    timeout_s: float | None = None
    retry: tuple[Retrier, ...] = ()
    catch: tuple[Catcher, ...] = ()
    error: str | None = None
    cause: str | None = None
    # A Choice's rules: (variable, whether it must be present, the next state).
    choices: tuple[tuple[str, bool, str], ...] = ()

    def next_of(self, document: Any) -> str | None:
        """The state after this one: a Choice's first rule that holds (else its Default)."""
        for variable, present, target in self.choices:
            if _present(variable, document) == present:
                return target
        return self.next


@dataclass(frozen=True)
class Machine:
    start_at: str
    states: Mapping[str, State]
    timeout_s: float | None = None

    @classmethod
    def parse(cls, definition: Mapping[str, Any]) -> Machine:
        _only(definition, _MACHINE_FIELDS, "the state machine")
        if definition.get("QueryLanguage", "JSONPath") != "JSONPath":
            raise DefinitionError("only JSONPath state machines run locally")
        raw_states = definition.get("States")
        if not isinstance(raw_states, Mapping) or not raw_states:
            raise DefinitionError("the state machine has no States")
        states = {name: _state(name, raw) for name, raw in raw_states.items()}
        start = definition.get("StartAt")
        targets = [start] + [s.next for s in states.values()]
        targets += [c.next for s in states.values() for c in s.catch]
        targets += [target for s in states.values() for _v, _p, target in s.choices]
        for target in targets:
            if target is not None and target not in states:
                raise DefinitionError(f"no state named {target!r}")
        return cls(str(start), states, _seconds(definition, "the state machine"))


@dataclass(frozen=True)
class Retry:
    """Run the state again after `delay_s` (ASL seconds), with each retrier's retries so far
    (by its position) counting this one."""

    delay_s: float
    retries: dict[int, int]


@dataclass(frozen=True)
class Caught:
    """Go on at `next` with `document`: the state's input with the error at the catcher's
    ResultPath."""

    next: str
    document: Any


def on_error(
    state: State, error: str, cause: str, document: Any, retries: Mapping[int, int]
) -> Retry | Caught | None:
    """What `state`'s Retry and Catch make of `error`, given `retries` (each retrier's
    retries so far): the first retrier naming it retries while it has attempts left; then
    the first catcher naming it goes on elsewhere; None fails the execution."""
    for position, retrier in enumerate(state.retry):
        if _matches(retrier.errors, error):
            done = retries.get(position, 0)
            if done < retrier.max_attempts:
                delay_s = retrier.interval_s * retrier.backoff**done
                return Retry(delay_s, {**retries, position: done + 1})
            break  # this retrier is spent: no other retrier is asked
    for catcher in state.catch:
        if _matches(catcher.errors, error):
            caught = {"Error": error, "Cause": cause}
            return Caught(catcher.next, put(document, catcher.result_path, caught))
    return None


def _matches(names: Sequence[str], error: str) -> bool:
    if error in names:
        return True
    if ALL in names:
        return error != RUNTIME
    return TASK_FAILED in names and error not in (TIMEOUT, RUNTIME)


def parameters(template: Any, document: Any, context: Mapping[str, Any]) -> Any:
    """A key ending in `.$` takes the value at its path (`$` input, `$$` context)."""
    if isinstance(template, Mapping):
        filled: dict[str, Any] = {}
        for key, value in template.items():
            if key.endswith(".$"):
                filled[key[:-2]] = resolve(str(value), document, context)
            else:
                filled[key] = parameters(value, document, context)
        return filled
    if isinstance(template, list):
        return [parameters(value, document, context) for value in template]
    return copy.deepcopy(template)


def resolve(path: str, document: Any, context: Mapping[str, Any]) -> Any:
    """The value at a reference path (`$`, `$.a.b`, `$$.Execution.Name`)."""
    if path.startswith("$$"):
        root: Any = context
        rest = path[2:]
    else:
        root, rest = document, path[1:]
    value = root
    for name in _fields(path, rest):
        if not isinstance(value, Mapping) or name not in value:
            raise DefinitionError(f"the path {path!r} does not exist in the input")
        value = value[name]
    return copy.deepcopy(value)


def put(document: Any, path: str | None, value: Any) -> Any:
    """The state output for a ResultPath; None keeps the input as it was."""
    if path is None:
        return copy.deepcopy(document)
    names = _fields(path, path[1:])
    if not names:
        return copy.deepcopy(value)
    output: Any = copy.deepcopy(document) if isinstance(document, Mapping) else {}
    target = output
    for name in names[:-1]:
        if not isinstance(target.get(name), dict):
            target[name] = {}
        target = target[name]
    target[names[-1]] = copy.deepcopy(value)
    return output


def _fields(path: str, rest: str) -> list[str]:
    if not path.startswith("$") or (rest and not rest.startswith(".")):
        raise DefinitionError(f"the runner reads plain paths like $.a.b, not {path!r}")
    names = rest.split(".")[1:] if rest else []
    if any(not n or any(c in n for c in "[]*?@()'\" ") for n in names):
        raise DefinitionError(f"the runner reads plain paths like $.a.b, not {path!r}")
    return names


def _state(name: str, raw: Any) -> State:
    if not isinstance(raw, Mapping):
        raise DefinitionError(f"state {name!r} is not an object")
    kind = raw.get("Type")
    allowed = _STATE_FIELDS.get(str(kind))
    if allowed is None:
        raise DefinitionError(f"state {name!r}: {kind!r} states do not run locally")
    _only(raw, allowed, f"state {name!r}")
    terminal = kind in ("Succeed", "Fail")
    if kind == "Choice":
        return _choice(name, raw)
    if not terminal and bool(raw.get("End")) == ("Next" in raw):
        raise DefinitionError(f"state {name!r} needs exactly one of Next or End")
    if kind == "Task" and not isinstance(raw.get("Resource"), str):
        raise DefinitionError(f"state {name!r} has no Resource")
    return State(
        name=name,
        type=str(kind),
        next=raw.get("Next"),
        resource=raw.get("Resource"),
        parameters=raw.get("Parameters"),
        result_path=raw.get("ResultPath", "$"),
        timeout_s=_seconds(raw, f"state {name!r}"),
        retry=tuple(_retrier(name, r) for r in raw.get("Retry", ())),
        catch=tuple(_catcher(name, c) for c in raw.get("Catch", ())),
        error=raw.get("Error"),
        cause=raw.get("Cause"),
    )


def _choice(name: str, raw: Mapping[str, Any]) -> State:
    rules = raw.get("Choices")
    if not isinstance(rules, list) or not rules or "Default" not in raw:
        raise DefinitionError(f"state {name!r} needs Choices and a Default")
    choices = []
    for rule in rules:
        _only(rule, _CHOICE_FIELDS, f"a rule of {name!r}")
        if not isinstance(rule.get("IsPresent"), bool) or "Variable" not in rule:
            raise DefinitionError(f"a rule of {name!r} tests IsPresent on a Variable only")
        _fields(str(rule["Variable"]), str(rule["Variable"])[1:])
        choices.append((str(rule["Variable"]), bool(rule["IsPresent"]), str(rule["Next"])))
    return State(name=name, type="Choice", next=str(raw["Default"]), choices=tuple(choices))


def _present(path: str, document: Any) -> bool:
    try:
        resolve(path, document, {})
    except DefinitionError:
        return False
    return True


def _retrier(state: str, raw: Mapping[str, Any]) -> Retrier:
    _only(raw, _RETRY_FIELDS, f"a Retry of {state!r}")
    return Retrier(
        errors=_errors(state, raw),
        interval_s=float(raw.get("IntervalSeconds", 1)),
        backoff=float(raw.get("BackoffRate", 2.0)),
        max_attempts=int(raw.get("MaxAttempts", 3)),
    )


def _catcher(state: str, raw: Mapping[str, Any]) -> Catcher:
    _only(raw, _CATCH_FIELDS, f"a Catch of {state!r}")
    return Catcher(_errors(state, raw), str(raw["Next"]), raw.get("ResultPath", "$"))


def _errors(state: str, raw: Mapping[str, Any]) -> tuple[str, ...]:
    errors = raw.get("ErrorEquals")
    if not isinstance(errors, list) or not errors:
        raise DefinitionError(f"a Retry or Catch of {state!r} has no ErrorEquals")
    return tuple(str(e) for e in errors)


def _seconds(raw: Mapping[str, Any], what: str) -> float | None:
    value = raw.get("TimeoutSeconds")
    if value is None:
        return None
    if not isinstance(value, int | float) or value <= 0:
        raise DefinitionError(f"{what}: TimeoutSeconds must be a positive number")
    return float(value)


def _only(raw: Mapping[str, Any], allowed: set[str], what: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise DefinitionError(f"{what} uses {', '.join(unknown)}, which the runner does not run")
