"""The per-token rate limit on AWS counts in batches far below the limit, as a
client notices it: the same answers, a table written less often."""

from __future__ import annotations

from agent_memory.domain.identity import hash_token
from agent_memory.domain.limits import window_at
from agent_memory.persistence.limits import TableCounters
from agent_memory.service.limits import REQUESTS_SCOPE
from tests.support.rate_limits import T0, Serve, World, people, serve

# `serve` builds a deployment whose limits count in the table (the AWS wiring).
__all__ = ["serve"]


def counted(world: World, token: str) -> int:
    subject = hash_token(token)[:32]
    return TableCounters(world.store).count(REQUESTS_SCOPE, subject, window_at(T0))


def test_a_batched_limit_still_answers_429_on_the_first_request_over_it(serve: Serve) -> None:
    world = serve(40)
    ana, bob = people(world)
    world.at(15_000)
    assert [world.get(ana).status_code for _ in range(40)] == [200] * 40
    over = world.get(ana)
    assert (over.status_code, over.headers["Retry-After"]) == (429, "45")
    # Past half the limit every request was written: the table holds all 40.
    assert counted(world, ana.token) == 40
    assert world.get(bob).status_code == 200


def test_far_below_the_limit_the_table_is_written_once_a_batch(serve: Serve) -> None:
    world = serve(1200)
    (ana,) = people(world, 1)
    assert all(world.get(ana).status_code == 200 for _ in range(20))
    # Requests 1, 9 and 17 wrote (1 + 8 + 8 uses); the last 3 ride on the next write.
    assert counted(world, ana.token) == 17
