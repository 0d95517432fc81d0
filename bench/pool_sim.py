"""A discrete-event simulation of one Bot's memory pool at its peak hour (docs/scale.md).

No AWS account is reachable from here, so the pool's ceilings are simulated from AWS's
published limits and the service's own apply sequence:

- the pool's partition serves at most 3,000 read units and 1,000 write units a second
  (a strongly consistent read unit is 4 KB, a write unit 1 KB, a transactional write counts
  twice); a Query returns at most 1 MB a page. Reads and writes queue page by page on the
  partition, so a long read and short ones share it as throttled retries do on AWS;
- every change is ONE transaction conditional on the head row's `version` read before the
  change's own reads (ADR 0050): `Head.commit` is that condition, and `replay` applies it to
  a given order of reads and commits, which tests/unit/test_pool_sim.py checks against the
  memory Bot's real apply (the pool engine's `apply_cycle`) on the embedded AWS;
- a losing apply retries as `until_it_lands` does (8 tries, full-jitter backoff from 4 ms to
  128 ms, 8 s budget), then the Step Functions task retries it (2 s, 4 s, 8 s; ASL
  `ApplyLearning`), then the run fails;
- request-path reads (the turn's enrichment, a person's GET) must answer within the 15 s
  window (seed 002) or are counted as timed out.

Designs, by what each read covers (the enrichment of every turn, LoadEvidence and the apply
of every learning run, a person's GET):

- `pool`: before ADR 0083, every one of them reads the whole pool;
- `audience`: ADR 0083 as built, all four read only the audience rows of the Chat's readers
  or the person (a `ReaderPool`);
- `audience+batch`: the same, and the runs that queue on one pool commit together, up to one
  transaction's 100 actions (the next ceiling, at about a million people).

Every row of a pool is on its one partition (ADR 0050; DynamoDB may split a hot item
collection by sort key, which is not counted on here).

    python -m bench.pool_sim      # prints the table as JSON; `run()` returns it
"""

from __future__ import annotations

import heapq
import json
import math
import random
from collections.abc import Callable, Generator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# --- AWS's published limits (sources in docs/scale.md) ------------------------------------


@dataclass(frozen=True)
class Aws:
    partition_rcu_s: float = 3_000.0  # strongly consistent reads of 4 KB, per partition
    partition_wcu_s: float = 1_000.0  # writes of 1 KB, per partition (and per item)
    rcu_bytes: int = 4_096
    wcu_bytes: int = 1_024
    transactional_factor: int = 2  # a transactional write or read counts twice
    page_bytes: int = 1_048_576  # a Query page
    max_actions: int = 100  # TransactWriteItems
    request_window_s: float = 15.0  # seed 002: the confide answer and the new input
    # Assumptions, not published figures: one request's round trip in the Region.
    request_s: float = 0.005
    transaction_s: float = 0.015


AWS = Aws()


# --- The conflict rule, shared with the check against the real code -----------------------


class Head:
    """The pool's head row: one `version`, moved by every committed change. A change
    commits only when the version is still the one it read (`count_is("version", ...)`)."""

    def __init__(self) -> None:
        self.version = 0

    def read(self) -> int:
        return self.version

    def commit(self, read_version: int) -> bool:
        if read_version != self.version:
            return False
        self.version += 1
        return True


def replay(order: Sequence[tuple[str, str]]) -> list[tuple[str, str, bool | None]]:
    """Apply `order` ((`read` | `commit`, apply id), in time order) to one head: each commit
    is conditional on the version its apply's latest read saw. Returns each event with its
    outcome (None for a read)."""
    head, seen = Head(), {}
    outcomes: list[tuple[str, str, bool | None]] = []
    for kind, who in order:
        if kind == "read":
            seen[who] = head.read()
            outcomes.append((kind, who, None))
        else:
            outcomes.append((kind, who, head.commit(seen[who])))
    return outcomes


# --- The load ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """One Bot in one organization at its peak hour (assumptions with sources: docs/scale.md)."""

    people: int
    turns_per_person_day: float = 5.0
    confide_share: float = 0.25
    peak_to_average: float = 3.0
    entries_per_apply: float = 1.8  # facts and observations written by one learning apply
    gets_per_person_day: float = 0.2  # GET /memory (the console, the CLI)
    person_writes_per_person_day: float = 0.05  # Remember, Forget
    group_share: float = 0.1  # turns in a Channel's group chat (their facts are the group's)
    channel_people: int = 10  # people of one Channel
    days_of_growth: float = 30.0
    entry_bytes: int = 1_024  # one row: sealed content with its wrapped key, metadata
    model_s: float = 1.5  # the learning model's answer (bench/cost_model.py's assumption)
    cpu_per_entry_s: float = 0.00033  # measured: the memory read's own time per entry

    @property
    def turns_s(self) -> float:
        return self.people * self.turns_per_person_day / 86_400 * self.peak_to_average

    @property
    def applies_s(self) -> float:
        return self.turns_s * self.confide_share

    @property
    def pool_entries(self) -> int:
        per_day = self.people * self.turns_per_person_day * self.confide_share
        return int(per_day * self.entries_per_apply * self.days_of_growth)

    @property
    def person_entries(self) -> float:
        """Entries one person's audience rows hold: their own, and their Channels' (each
        group fact is seen by the Channel's people)."""
        per_person = self.pool_entries / self.people
        return per_person * ((1 - self.group_share) + self.group_share * self.channel_people)


# --- The event loop -----------------------------------------------------------------------

Step = Generator[Callable[["Sim", Callable[[], None]], None], None, None]


class Sim:
    def __init__(self) -> None:
        self.now = 0.0
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0

    def at(self, when: float, then: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (when, self._seq, then))

    def spawn(self, process: Step) -> None:
        self._resume(process)

    def _resume(self, process: Step) -> None:
        try:
            request = next(process)
        except StopIteration:
            return
        request(self, lambda: self._resume(process))

    def run(self, until: float) -> None:
        while self._queue and self._queue[0][0] <= until:
            when, _seq, then = heapq.heappop(self._queue)
            self.now = when
            then()


def sleep(seconds: float) -> Callable[[Sim, Callable[[], None]], None]:
    def request(sim: Sim, resume: Callable[[], None]) -> None:
        sim.at(sim.now + max(0.0, seconds), resume)

    return request


class Server:
    """A FIFO of work on the partition at `rate` units a second."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.free_at = 0.0

    def use(self, units: float) -> Callable[[Sim, Callable[[], None]], None]:
        def request(sim: Sim, resume: Callable[[], None]) -> None:
            start = max(sim.now, self.free_at)
            self.free_at = start + units / self.rate
            sim.at(self.free_at, resume)

        return request


# --- The pool under one design ------------------------------------------------------------


@dataclass
class Stats:
    applies: int = 0
    committed: int = 0
    conflicts: int = 0
    step_retries: int = 0
    failed: int = 0
    lags: list[float] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)
    reads: list[float] = field(default_factory=list)
    enrichments: list[float] = field(default_factory=list)
    timed_out: int = 0
    request_reads: int = 0  # started; one never finished is past the window too


WRITE_TRIES = 8
BUDGET_S = 8.0
STEP_RETRIES = (2.0, 4.0, 8.0)


class Pool:
    def __init__(self, sim: Sim, load: Load, design: str, rng: random.Random) -> None:
        self.sim, self.load, self.design, self.rng = sim, load, design, rng
        self.head = Head()
        self.reads = Server(AWS.partition_rcu_s)
        self.writes = Server(AWS.partition_wcu_s)
        self.stats = Stats()
        self.queued: list[float] = []  # ready runs' start times (batching)
        self.applier_busy = False

    # What a read covers under the design.
    def covered(self, site: str) -> float:
        """Entries one read at `site` (enrichment, evidence, apply, get) goes through."""
        whole = {
            "pool": ("enrichment", "evidence", "apply", "get"),
        }
        if site in whole.get(self.design, ()):
            return float(self.load.pool_entries)
        return self.load.person_entries

    def read(self, entries: float) -> Step:
        """The head, then the rows page by page on the pool's partition (a long read and
        short ones take turns on it), then the CPU of the entries."""
        yield self.reads.use(1)
        yield sleep(AWS.request_s)
        remaining = entries * self.load.entry_bytes
        pages = max(1, math.ceil(remaining / AWS.page_bytes))
        # Coalesce pages into at most 64 turns on the partition (each a fair share of it).
        turns = min(pages, 64)
        for _ in range(turns):
            chunk = remaining / turns
            yield self.reads.use(math.ceil(chunk / AWS.rcu_bytes) or 1)
            yield sleep(AWS.request_s * pages / turns)
        yield sleep(entries * self.load.cpu_per_entry_s)

    def transaction(self, rows: float) -> Step:
        units = rows * math.ceil(self.load.entry_bytes / AWS.wcu_bytes) * AWS.transactional_factor
        yield self.writes.use(units)
        yield sleep(AWS.transaction_s)

    def apply_rows(self, runs: int = 1) -> float:
        """Head, log, event, each run's end, and each entry's rows (base, recency copy and,
        with the audience rows, one audience row)."""
        per_entry = 2 if self.design == "pool" else 3
        return 3 + runs * (1 + self.load.entries_per_apply * per_entry)

    # Processes.
    def learning(self) -> Step:
        started = self.sim.now
        self.stats.applies += 1
        yield from self.read(self.covered("evidence"))
        yield sleep(self.load.model_s)
        if self.design == "audience+batch":
            self.queued.append(started)
            if not self.applier_busy:
                self.applier_busy = True
                self.sim.spawn(self.applier())
            return
        yield from self.apply(started)

    def apply(self, started: float) -> Step:
        for step in range(len(STEP_RETRIES) + 1):
            deadline = self.sim.now + BUDGET_S
            for attempt in range(WRITE_TRIES):
                version = self.head.read()
                yield from self.read(self.covered("apply"))
                yield from self.transaction(self.apply_rows())
                if self.head.commit(version):
                    self.stats.committed += 1
                    self.stats.lags.append(self.sim.now - started)
                    return
                self.stats.conflicts += 1
                wait = self.rng.uniform(0.0, min(0.128, 0.004 * 2 ** (attempt + 1)))
                if self.sim.now + wait > deadline:
                    break
                yield sleep(wait)
            if step < len(STEP_RETRIES):
                self.stats.step_retries += 1
                yield sleep(STEP_RETRIES[step])
        self.stats.failed += 1

    def applier(self) -> Step:
        """One writer per pool takes every queued run (up to one transaction) at once."""
        per_run = 1 + self.load.entries_per_apply * 3
        most = max(1, int((AWS.max_actions - 3) // per_run))
        while self.queued:
            batch, self.queued = self.queued[:most], self.queued[most:]
            while True:
                version = self.head.read()
                yield from self.read(self.covered("apply") * len(batch))
                yield from self.transaction(self.apply_rows(len(batch)))
                if self.head.commit(version):
                    break
                self.stats.conflicts += 1
                yield sleep(self.rng.uniform(0.0, 0.032))
            self.stats.committed += len(batch)
            self.stats.batch_sizes.append(len(batch))
            self.stats.lags += [self.sim.now - s for s in batch]
        self.applier_busy = False

    def person_write(self) -> Step:
        """Remember or Forget: a change of the head like any other (its losses not counted)."""
        for attempt in range(WRITE_TRIES):
            version = self.head.read()
            yield from self.read(self.covered("get"))
            yield from self.transaction(5)
            if self.head.commit(version):
                return
            yield sleep(self.rng.uniform(0.0, min(0.128, 0.004 * 2 ** (attempt + 1))))

    def timed_read(self, site: str, into: list[float]) -> Step:
        started = self.sim.now
        self.stats.request_reads += 1
        yield from self.read(self.covered(site))
        yield sleep(AWS.request_s)  # the head again
        spent = self.sim.now - started
        into.append(spent)
        if spent > AWS.request_window_s:
            self.stats.timed_out += 1


def _arrivals(
    sim: Sim, rate: float, seconds: float, rng: random.Random, start: Callable[[], Step]
) -> None:
    """Poisson arrivals at `rate` a second for `seconds`."""
    when = rng.expovariate(rate) if rate > 0 else seconds + 1
    while when < seconds:
        sim.at(when, lambda: sim.spawn(start()))
        when += rng.expovariate(rate)


def simulate(load: Load, design: str, seconds: float = 600.0, seed: int = 7) -> dict[str, Any]:
    """The peak hour's first `seconds` on one pool, then until the work started is done."""
    rng = random.Random(seed)
    sim = Sim()
    pool = Pool(sim, load, design, rng)
    _arrivals(sim, load.applies_s, seconds, rng, pool.learning)
    _arrivals(
        sim,
        load.turns_s,
        seconds,
        rng,
        lambda: pool.timed_read("enrichment", pool.stats.enrichments),
    )
    gets = load.people * load.gets_per_person_day / 86_400 * load.peak_to_average
    _arrivals(sim, gets, seconds, rng, lambda: pool.timed_read("get", pool.stats.reads))
    writes = load.people * load.person_writes_per_person_day / 86_400 * load.peak_to_average
    _arrivals(sim, writes, seconds, rng, pool.person_write)
    sim.run(until=seconds * 20)
    s = pool.stats
    finished = s.committed + s.failed
    return {
        "people": load.people,
        "design": design,
        "pool_entries": load.pool_entries,
        "person_entries": round(load.person_entries, 1),
        "applies_per_s": round(load.applies_s, 2),
        "applies": s.applies,
        "committed": s.committed,
        "failed": s.failed,
        "unfinished": s.applies - finished,
        "throughput_per_s": round(s.committed / seconds, 2),
        "conflict_retries": s.conflicts,
        "step_retries": s.step_retries,
        "mean_batch": round(sum(s.batch_sizes) / len(s.batch_sizes), 2) if s.batch_sizes else None,
        "lag_p50_s": _quantile(s.lags, 0.5),
        "lag_p99_s": _quantile(s.lags, 0.99),
        "lag_max_s": round(max(s.lags), 2) if s.lags else None,
        "read_p99_s": _quantile(s.reads, 0.99),
        "enrichment_read_p99_s": _quantile(s.enrichments, 0.99),
        "request_reads_past_15s": s.timed_out + s.request_reads - len(s.reads) - len(s.enrichments),
        "request_reads": s.request_reads,
    }


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


SIZES = (10_000, 100_000, 1_000_000)
DESIGNS = ("pool", "audience", "audience+batch")


def run(seconds: float = 600.0) -> dict[str, Any]:
    rows = []
    for people in SIZES:
        for design in DESIGNS:
            # Where the whole-pool design stops: young pools (hours to a day of growth).
            days = (0.05, 0.2, 1.0, 30.0) if design == "pool" else (30.0,)
            for day in days:
                load = Load(people, days_of_growth=day)
                rows.append({"days_of_growth": day, **simulate(load, design, seconds)})
    return {
        "seconds_of_peak": seconds,
        "aws": asdict(AWS),
        "load": {k: v for k, v in asdict(Load(0)).items() if k != "people"},
        "rows": rows,
        "note": (
            "simulated, not measured: AWS's published per-partition limits and the service's "
            "apply sequence; lags include LoadEvidence and the model's 1.5 s"
        ),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
