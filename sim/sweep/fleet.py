"""Fleet runs split by project instance across dask.distributed workers, merged exactly.

    result = run_fleet("scenarios/saas-diurnal.yaml", workers=4)   # embedded LocalCluster
    result = run_fleet(path, scheduler="tcp://10.0.0.5:8786")       # an existing cluster
    result = run_fleet(path)                                        # in this process

Projects never interact inside a run (each has its own random streams, its
own operation lanes and its own timers), so a shard that holds some of the
project instances replays exactly what those projects do in a run of the
whole fleet. What differs is only how rows of different projects interleave
in the record lists. Every result, sharded or not, is therefore put in one
canonical order (`sim.scenario.merge`), so a single-process run and a
merged sharded run of the same seed hold the same rows in the same order.

Tasks receive plain data (the scenario document as a dict, instance keys, a
seed), never live objects, so they can run on any worker of any cluster
that has this package installed.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.engine.records import RunResult
from sim.metrics.theory import p_suspended
from sim.processes.cluster import default_workers, open_client, worker_count
from sim.processes.main_guard import in_process_instead
from sim.rules.timeouts import effective_suspend_timeout
from sim.scenario.loader import _parse_yaml, load_scenario, parse_scenario  # the loader's YAML
from sim.scenario.merge import canonical_result, instance_order
from sim.scenario.references import body_references, parse_reference
from sim.scenario.runner import run_scenario
from sim.scenario.schema import Scenario
from sim.workload.streams import HOUR_S

#: progress of a batch of tasks: (tasks done, tasks, simulated seconds reached, simulated total)
BatchProgress = Callable[[int, int, float, float], None]
#: progress of one run: (simulated seconds reached, total), as `run_scenario` reports it
RunProgress = Callable[[float, float], None]

SHARDS_PER_WORKER = 4  # more shards than workers: dask balances uneven shards
REPORT_EVERY_S = 0.25  # a task reports its simulated time at most this often


# ---- the scenario as plain data ---------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """A scenario document (the YAML mapping), where relative paths in it are read from,
    and the name used in error messages."""

    document: dict[str, Any]
    base_dir: str | None
    name: str

    def scenario(self) -> Scenario:
        return parse_scenario(self.document, source=self.name, base_dir=self.base_dir)


def read_source(source: str | Path | Mapping[str, Any] | Source,
                base_dir: str | Path | None = None) -> Source:
    """A scenario file's path, or an already-parsed mapping, as a `Source`.

    The file is read with the scenario loader's YAML rules (`off` stays a
    string, a key given twice is an error). Raises ScenarioError.
    """
    if isinstance(source, Source):
        return source
    if isinstance(source, Mapping):
        base = None if base_dir is None else str(base_dir)
        return Source(dict(source), base, str(source.get("name", "<scenario>")))
    path = Path(source)
    load_scenario(path)  # the loader's own one-line errors: missing file, bad YAML, ...
    document = _parse_yaml(path.read_text(encoding="utf-8"), str(path))
    assert isinstance(document, Mapping)  # load_scenario refused anything else
    return Source(dict(document), str(path.parent if base_dir is None else base_dir), str(path))


# ---- shards -------------------------------------------------------------------------------


def _action_keys(action: Any) -> set[str]:
    keys = {ref.instance_key for ref in action.references()}
    keys |= {parse_reference(text).instance_key for _, text in body_references(action.body)}
    return keys


#: what a wake costs a run (the suspend before it, its operations, its state rows), in
#: arrivals. Measured on the realistic benchmark fleet: a compute that never suspends
#: (17,000 arrivals a month) took two thirds of the time of one with 4,300 arrivals
#: and 2,300 wakes.
WAKE_COST = 9.0


def _instance_weight(scenario: Scenario, template: Any) -> float:
    """The work of one instance of `template` over the run, in arrivals: one, plus each
    compute's expected arrivals and wakes (`_compute_work`)."""
    return 1.0 + sum(_compute_work(scenario, compute)
                     for branch in template.branches for compute in branch.computes)


def _compute_work(scenario: Scenario, compute: Any) -> float:
    """Expected arrivals plus WAKE_COST times expected wakes, hour by hour: an arrival at
    rate lam finds the compute suspended with probability exp(-lam (T + E[D])) (Poisson
    arrivals; for other arrival processes an estimate, which is all a weight needs)."""
    process = compute.arrival_process(scenario.start)
    if process is None:
        return 0.0
    timeout = effective_suspend_timeout(compute.suspend_timeout_seconds)
    mean_session = compute.session_model().mean_duration_s
    work = 0.0
    for t0 in range(0, math.ceil(scenario.duration), int(HOUR_S)):
        t1 = min(t0 + HOUR_S, scenario.duration)
        rate = process.mean_rate_per_s(t0, t1)
        wakes = 0.0 if timeout is None else p_suspended(rate, timeout, mean_session)
        work += rate * (t1 - t0) * (1.0 + WAKE_COST * wakes)
    return work


@dataclass(frozen=True)
class Shard:
    keys: tuple[str, ...]  # project instances, in fleet order
    weight: float  # expected work (`_compute_work`): heavier shards go out first
    unreferenced_actions: bool  # this shard runs the scripted calls that name no project


def shard_shares(parts: int, workers: int | None = None) -> list[float]:
    """The share of the fleet's work each of `parts` shards takes, largest first.

    With `workers` fewer than `parts`, by factoring: shards go out in rounds of
    one per worker, each shard of a round taking 1 / (2 workers) of the work
    still left and the last round all of it, so the last shards are small and
    the workers finish close together whatever one of them lost on the way (a
    round short of workers, when they do not divide `parts`, goes first, its
    shards as large as those of the round after it).
    Otherwise (and for one worker, which has no one to wait for) equal shares.
    """
    parts = max(1, parts)
    if workers is None or workers == 1 or workers >= parts:
        return [1.0 / parts] * parts
    rounds = parts // workers
    shares: list[float] = []
    left = 1.0
    for n in range(rounds):
        each = left / workers if n == rounds - 1 else left / (2 * workers)
        shares += [each] * workers
        left -= each * workers
    short = parts % workers  # a short round first, its shards as large as the next ones
    first = shares[0] / (1.0 + short * shares[0])
    return [first] * short + [share * (1.0 - short * first) for share in shares]


def plan_shards(scenario: Scenario, parts: int, workers: int | None = None) -> list[Shard]:
    """Split the fleet into at most `parts` shards of expected work close to
    `shard_shares(parts, workers)`.

    Instances named together by one scripted call stay in one shard (the call
    needs all of them). Shards are runs of consecutive instances where
    possible; scripted calls that name no project run in the first shard only.
    """
    instances = scenario.instances()
    order = {inst.key: i for i, inst in enumerate(instances)}
    parent = list(range(len(instances)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for action in scenario.actions:
        linked = sorted(order[k] for k in _action_keys(action) if k in order)
        for i in linked[1:]:
            parent[find(i)] = find(linked[0])
    groups: dict[int, list[int]] = {}
    for i in range(len(instances)):
        groups.setdefault(find(i), []).append(i)
    weight_of = {p.name: _instance_weight(scenario, p) for p in scenario.projects}
    weights = [weight_of[inst.template.name] for inst in instances]
    total = sum(weights)
    targets = [total * share for share in shard_shares(min(parts, len(groups)), workers)]
    shards: list[list[int]] = [[]]
    load = 0.0
    for members in sorted(groups.values(), key=min):
        target = targets[min(len(shards), len(targets)) - 1]
        if shards[-1] and load + sum(weights[i] for i in members) / 2 > target:
            shards.append([])
            load = 0.0
        shards[-1] += members
        load += sum(weights[i] for i in members)
    target = targets[min(len(shards), len(targets)) - 1]
    if len(shards) > 1 and load < target / 2:  # a remainder: one more task, run last, for
        remainder = shards.pop()               # little work (its fixed cost was the tail)
        shards[-1] += remainder
    return [
        Shard(tuple(instances[i].key for i in sorted(members)),
              sum(weights[i] for i in members), n == 0)
        for n, members in enumerate(shards)
    ]


def shard_document(source: Source, scenario: Scenario, shard: Shard) -> dict[str, Any]:
    """The scenario document a shard runs: only the scripted calls that are its to make."""
    document = dict(source.document)
    if not scenario.actions:
        return document
    mine = set(shard.keys)
    raw = list(document.get("actions") or [])
    document["actions"] = [
        raw[i] for i, action in enumerate(scenario.actions)
        if (_action_keys(action) <= mine and _action_keys(action))
        or (not _action_keys(action) and shard.unreferenced_actions)
    ]
    return document


# ---- tasks (plain data in, plain rows out) ------------------------------------------------


def progress_reporter(topic: str | None, task: int) -> RunProgress | None:
    """A progress callback that sends (task, reached, total) to the client, throttled."""
    if topic is None:
        return None
    from distributed import get_worker

    worker = get_worker()
    last = [0.0]

    def report(reached: float, total: float) -> None:
        now = time.monotonic()
        if now - last[0] >= REPORT_EVERY_S or reached >= total:
            last[0] = now
            worker.log_event(topic, {"task": task, "reached": reached, "total": total})

    return report


def run_shard(document: dict[str, Any], base_dir: str | None, seed: int | None,
              keys: Sequence[str], topic: str | None = None, task: int = 0) -> RunResult:
    """Run the project instances `keys` of a scenario document (one dask task)."""
    scenario = parse_scenario(document, base_dir=base_dir)
    wanted = set(keys)
    instances = [inst for inst in scenario.instances() if inst.key in wanted]
    return run_scenario(scenario, seed=seed, instances=instances,
                        progress=progress_reporter(topic, task))


@dataclass
class _Tally:
    """Simulated time reached per task, updated from worker events on the client's loop."""

    totals: list[float]
    progress: BatchProgress | None
    reached: list[float] = field(init=False)
    done: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.reached = [0.0] * len(self.totals)

    def on_event(self, event: Any) -> None:
        _, msg = event
        with self.lock:
            i = int(msg["task"])
            self.reached[i] = max(self.reached[i], float(msg["reached"]))
        self.report()

    def finished(self, i: int) -> None:
        with self.lock:
            self.reached[i] = self.totals[i]
            self.done += 1
        self.report()

    def report(self) -> None:
        if self.progress is not None:
            with self.lock:
                args = (self.done, len(self.totals), sum(self.reached), sum(self.totals))
            self.progress(*args)


def run_tasks(client: Any, func: Callable[..., Any], calls: Sequence[tuple[tuple, float]],
              progress: BatchProgress | None = None, priority: Sequence[float] | None = None,
              at_once: int | None = None) -> list[Any]:
    """Run func(*args, topic, i) for each (args, simulated seconds) of `calls` on the cluster;
    results in the order of `calls`. Tasks with a higher `priority` start first; a task's
    error is raised as soon as it is known.

    `at_once` caps the tasks handed to the cluster at a time: the others wait here, and
    the next goes out the moment one finishes. That is for a few long tasks on as many
    single-threaded workers: dask would hand a busy worker a second task to hold, and
    the last such task would wait there (until the scheduler moves it, seconds later)
    while another worker sat idle.
    """
    from distributed import as_completed

    topic = f"sim-progress-{uuid.uuid4().hex}"
    tally = _Tally([total for _, total in calls], progress)
    rank = [0.0] * len(calls) if priority is None else list(priority)
    waiting = sorted(range(len(calls)), key=lambda i: -rank[i])  # stable: ties keep order
    index: dict[str, int] = {}
    results: list[Any] = [None] * len(calls)

    def submit() -> Any:
        i = waiting.pop(0)
        args, _ = calls[i]
        future = client.submit(func, *args, topic, i, pure=False, priority=rank[i])
        index[future.key] = i
        return future

    def fetch(future: Any) -> None:
        i = index[future.key]
        results[i] = future.result()
        future.release()  # the worker may drop its copy
        tally.finished(i)

    client.subscribe_topic(topic, tally.on_event)
    # results are fetched on a thread while the loop below hands out the next tasks: a
    # fetch waits on a worker busy with its next task, and no worker should wait on it
    fetcher = ThreadPoolExecutor(1, thread_name_prefix="sim-fetch")
    try:
        first = len(waiting) if at_once is None else max(1, at_once)
        running = as_completed([submit() for _ in range(min(first, len(waiting)))])
        fetches = []
        for future in running:
            if future.status == "error":
                future.result()  # raises the task's error
            if waiting:
                running.add(submit())
            fetches.append(fetcher.submit(fetch, future))
        for fetched in fetches:
            fetched.result()
        return results
    finally:
        fetcher.shutdown(wait=True, cancel_futures=True)
        client.unsubscribe_topic(topic)


def run_local(func: Callable[..., Any], calls: Sequence[tuple[tuple, float]],
              progress: BatchProgress | None = None) -> list[Any]:
    """The same tasks one after another in this process (workers=0: no cluster)."""
    tally = _Tally([total for _, total in calls], progress)
    out = []
    for i, (args, _) in enumerate(calls):
        out.append(func(*args, None, i))
        tally.finished(i)
    return out


# ---- the entry point ----------------------------------------------------------------------


def run_fleet(
    source: str | Path | Mapping[str, Any] | Source,
    *,
    seed: int | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    cluster: Any = None,
    shards: int | None = None,
    progress: RunProgress | None = None,
) -> RunResult:
    """Run a scenario, whole or split by project instance across dask workers.

    With none of workers, scheduler, client or cluster the run happens in this
    process. `workers=N` starts an embedded LocalCluster of N processes;
    `scheduler="tcp://host:port"` uses an existing cluster; `client` an open
    dask Client; `cluster` a `sim.processes.cluster.started_client` not yet entered (the
    shards are planned while its workers start). Either way the result is in
    canonical order and, for one seed, the same rows in the same order. Raises
    ScenarioError or ScenarioRunError.
    """
    try:
        return _run_fleet(source, seed, workers, scheduler, client, cluster, shards, progress)
    except BaseException:
        if cluster is not None:  # started, maybe never entered
            cluster.close()
        raise


def _run_fleet(source: str | Path | Mapping[str, Any] | Source, seed: int | None,
               workers: int | None, scheduler: str | None, client: Any, cluster: Any,
               shards: int | None, progress: RunProgress | None) -> RunResult:
    src = read_source(source)
    scenario = src.scenario()
    order = instance_order(scenario)
    keys = list(order)
    if (client is None and scheduler is None and cluster is None and not workers) or \
            (cluster is None and in_process_instead("sim.run_fleet", workers, scheduler, client)):
        result = run_scenario(scenario, seed=seed, progress=progress)
        return canonical_result([(result, keys)], order)
    relay = None if progress is None else _run_progress(progress, scenario.duration)
    if cluster is None:
        cluster = nullcontext(client) if client is not None else open_client(workers, scheduler)
        embedded = client is None and scheduler is None
        expected = (workers or default_workers()) if embedded else None
    else:
        expected = cluster.workers
    planned = None if expected is None else _plan(src, scenario, seed, shards, expected)
    with cluster as active:
        workers_now = worker_count(active)
        if planned is None or workers_now != expected:
            planned = _plan(src, scenario, seed, shards, workers_now)
        plan, calls = planned
        results = run_tasks(active, run_shard, calls, relay,
                            priority=[shard.weight for shard in plan],
                            at_once=workers_now)
    return canonical_result([(r, s.keys) for r, s in zip(results, plan, strict=True)], order)


def _plan(src: Source, scenario: Scenario, seed: int | None, shards: int | None,
          workers: int) -> tuple[list[Shard], list[tuple[tuple, float]]]:
    """The shards for `workers` workers, and each shard's task arguments."""
    plan = plan_shards(scenario, shards or SHARDS_PER_WORKER * workers, workers)
    calls = [((shard_document(src, scenario, shard), src.base_dir, seed, shard.keys),
              scenario.duration) for shard in plan]
    return plan, calls


def _run_progress(progress: RunProgress, duration: float) -> BatchProgress:
    """Shards' progress as one run's: the mean simulated time reached over shards."""

    def relay(done: int, tasks: int, reached: float, total: float) -> None:
        progress(duration * reached / total if total else duration, duration)

    return relay
