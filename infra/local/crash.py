"""A crash hook of `make run` for durability tests: `MEMORY_KILL_AT=<point>:<n>` makes the
server SIGKILL itself the n-th time a learning step reaches `<point>`, as a `kill -9` would
at that moment, with nothing flushed or cleaned up:

- `<State>` (`LoadEvidence`, `CallModel`, `ApplyLearning`, `RecordFailure`): the runner
  saved that the state's attempt is under way, and its task is about to run;
- `<State>.done`: its task returned, and the runner has not saved its result yet (for
  `ApplyLearning`: the memory change committed, the run's end not saved by the runner).

Counted in this process only: each start counts from zero. Unset, the tasks are untouched.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

Task = Callable[[dict[str, Any]], Any]
SETTING = "MEMORY_KILL_AT"


def parse(setting: str) -> tuple[str, int]:
    """(point, n) of a `<point>:<n>` setting; ValueError when it is not one."""
    point, _sep, count = setting.rpartition(":")
    if not point or not count.isdigit() or int(count) < 1:
        raise ValueError(f"{SETTING} is <State>[.done]:<n> with n >= 1, not {setting!r}")
    return point, int(count)


def with_kill_point(tasks: Mapping[str, Task], setting: str | None) -> dict[str, Task]:
    """`tasks`, each reporting its state's boundaries to the kill point `setting` names."""
    if not setting:
        return dict(tasks)
    point, count = parse(setting)
    lock = threading.Lock()
    reached = 0

    def boundary(name: str) -> None:
        nonlocal reached
        if name != point:
            return
        with lock:
            reached += 1
            if reached != count:
                return
        sys.stderr.write(f"{SETTING}: killed at {point} ({count})\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    def wrapped(task: Task) -> Task:
        def run(event: dict[str, Any]) -> Any:
            state = str((event.get("context") or {}).get("state", ""))
            boundary(state)
            result = task(event)
            boundary(f"{state}.done")
            return result

        return run

    return {resource: wrapped(task) for resource, task in tasks.items()}
