"""When semantic recall's background indexes a thread's new messages: in batches, so that one
PutVectors carries many vectors, and after the thread goes idle, so that none is left out.
A thread's last `lastMessages` are in its own context verbatim (recall never returns them),
so indexing them later costs nothing; with the observer on, the batch is what fills one
billed put (128 KB), and a message is indexed once observed out of the raw window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_memory.domain.observation import PROMPT_CACHE_MS, observing

# S3 Vectors bills each PutVectors as 128 KB at least (aws.amazon.com/s3/pricing).
PUT_MIN_BYTES = 128 * 1024
# A vector's key and metadata (ids only) next to its float32 values, bytes.
VECTOR_OVERHEAD_BYTES = 200
# No save for this long and a thread is idle: the observer's own "auto" idle.
IDLE_MS = PROMPT_CACHE_MS


def batch_size(shown: int | None, dimension: int) -> int:
    """Messages one indexing batch holds: the newest messages the thread's context shows
    verbatim (`lastMessages`; None with the observer on: every unobserved one), at most as
    many vectors of `dimension` as fill PutVectors' billed minimum, at least 1."""
    fill = PUT_MIN_BYTES // (dimension * 4 + VECTOR_OVERHEAD_BYTES)
    return max(1, fill if shown is None else min(shown, fill))


def indexing_batch(options: Mapping[str, Any], dimension: int | None) -> int:
    """The messages one batch indexes for a thread with these (effective) options, vectors
    of `dimension`; 1 while the model's size is unknown (until it answers)."""
    if dimension is None:
        return 1
    shown = None if observing(options) else int(options["lastMessages"])
    return batch_size(shown, dimension)


def batch_due(indexed: int, upto: int, batch: int) -> bool:
    """Whether messages saved through `upto`, those below `indexed` already indexed, close a
    batch: a multiple of `batch` lies in `(indexed, upto]`."""
    return upto // batch > indexed // batch


def may_be_observed_out(tokens: int, message_tokens: int, idle_activation: bool) -> bool:
    """Whether the observer may have made messages active yet (so the log's boundary is
    worth reading): only past `messageTokens` of the thread's saved tokens (`blockAfter` is
    at least 1 x), or at any time with idle activation on."""
    return idle_activation or tokens > message_tokens
