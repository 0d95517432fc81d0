"""What a Lambda process builds once and keeps for its whole life (the handler's import,
the first wiring of the services): built with the cyclic collector paused, then frozen, as
the collector's passes over objects that live as long as the process find almost nothing to
free (docs/decisions.md, "Cold start: the collector paused while the handler imports")."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def built_for_good() -> Iterator[None]:
    """No collection while the block builds what the process keeps; then freeze what it
    built, and collect again if the collector was on before."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
