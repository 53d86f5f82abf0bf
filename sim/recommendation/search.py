"""Theory first, simulation to confirm: the cheapest choice per template that meets the targets.

    rec = recommend("scenarios/tenants.yaml", {"cold_starts_per_1000": 20, "refused": "0.1%"})
    rec.templates["hobby"].recommended.choice      # Choice(suspend_timeout_seconds=300, ...)

1. Every choice of every template's space is priced and judged by the
   closed forms (`sim.recommendation.theory`); choices that miss a target by
   far more than the theory's error are pruned.
2. The rest wait in order of predicted cost. Each round takes the next few
   of every undecided template, plus (first round) each template's current
   settings, and runs them as *slates*: a slate's scenario holds each
   template once, with one choice, and drops the templates that are done
   (projects never interact, so a template's figures do not depend on who
   runs beside it). Every slate runs R times with the sweep's replication
   seeds (common random numbers across slates), on dask.
3. A choice is confirmed when the upper end of the 95 % interval of every
   bounded figure is within its limit. A template is decided when some
   choice is confirmed and no unsimulated choice is predicted cheaper than
   it; the confirmed choice of lowest simulated mean cost is recommended.
4. When the queue runs dry (or max_rounds pass) with nothing confirmed,
   the template fails honestly: the closest choice and, per target, how far
   it misses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim.processes.main_guard import in_process_instead
from sim.recommendation.measure import recording, run_slate
from sim.recommendation.space import (
    Choice,
    SpaceOverride,
    apply_choices,
    current_choice,
    parse_space,
    space_of,
)
from sim.recommendation.targets import RecommendError, Target, as_targets, targets_for
from sim.recommendation.theory import Prediction, TemplateModel
from sim.scenario.loader import ScenarioError, parse_scenario
from sim.sweep import CONFIDENCE, mean_ci, replication_seed
from sim.sweep.fleet import BatchProgress, Source, open_client, read_source, run_local, run_tasks

PER_ROUND = 3  # choices of each undecided template simulated per round
MAX_ROUNDS = 8


@dataclass
class Candidate:
    template: str
    choice: Choice
    prediction: Prediction
    pruned: list[Target]  # targets the theory says it misses by far
    runs: list[dict[str, float | None]] = field(default_factory=list)

    @property
    def simulated(self) -> bool:
        return bool(self.runs)

    def interval(self, metric: str) -> tuple[float, float, float] | None:
        """Mean and 95 % interval over replications; None when no run measured it."""
        values = np.array([np.nan if r.get(metric) is None else float(r[metric])  # type: ignore[arg-type]
                           for r in self.runs])
        values = values[~np.isnan(values)]
        if len(values) == 0:
            return None
        if len(values) == 1:  # one replication measured it: no spread to judge
            v = float(values[0])
            return v, v, v
        return mean_ci(values, CONFIDENCE)

    def upper(self, metric: str) -> float | None:
        ci = self.interval(metric)
        return None if ci is None else ci[2]

    def misses(self, targets: Sequence[Target]) -> list[Target]:
        """Targets not met: by the interval once simulated, by the theory before."""
        if self.simulated:
            return [t for t in targets if not t.met_by(self.upper(t.metric))]
        return [t for t in targets if not self.prediction.meets(t)]

    def confirmed(self, targets: Sequence[Target]) -> bool:
        return self.simulated and not self.misses(targets)

    @property
    def cost(self) -> float:
        """Simulated mean cost once run, the theory's before."""
        ci = self.interval("cost") if self.simulated else None
        return self.prediction.cost if ci is None else ci[0]

    def shortfall(self, targets: Sequence[Target]) -> float:
        """How far the worst target is missed, relative to its limit (<= 0: met)."""
        worst = -math.inf
        for t in targets:
            value = self.upper(t.metric) if self.simulated else self.prediction.figures.get(
                t.metric)
            if value is not None:
                worst = max(worst, (value - t.limit) / max(t.limit, 1e-9))
        return worst


@dataclass
class TemplateOutcome:
    name: str
    count: int
    targets: list[Target]  # what this template must meet
    current: Candidate
    candidates: list[Candidate]
    recommended: Candidate | None = None
    binding: list[Target] = field(default_factory=list)
    closest: Candidate | None = None  # when nothing meets the targets
    failure: str | None = None

    @property
    def saving(self) -> float | None:
        if self.recommended is None:
            return None
        return self.current.cost - self.recommended.cost


@dataclass
class Recommendation:
    name: str
    targets: list[Target]
    replications: int
    templates: dict[str, TemplateOutcome]
    document: dict[str, Any]  # the scenario as given
    base_dir: str | None
    runs: int  # simulated runs, all rounds and replications
    rounds: int

    @property
    def met(self) -> bool:
        return all(t.recommended is not None for t in self.templates.values())

    def recommended_document(self) -> dict[str, Any]:
        """The scenario with each template's recommended choice (current where none is)."""
        choices = {name: (t.recommended or t.current).choice for name, t in self.templates.items()}
        return apply_choices(self.document, choices)

    @property
    def cost_now(self) -> float:
        return sum(t.current.cost for t in self.templates.values())

    @property
    def cost_after(self) -> float:
        return sum((t.recommended or t.current).cost for t in self.templates.values())


def recommend(
    source: str | Path | Mapping[str, Any] | Source,
    slo: Sequence[Target | str] | Mapping[str, float | str],
    space: Sequence[str | SpaceOverride] = (),
    *,
    replications: int = 5,
    workers: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    progress: BatchProgress | None = None,
    per_round: int = PER_ROUND,
    max_rounds: int = MAX_ROUNDS,
) -> Recommendation:
    """The cheapest choice per template whose 95 % intervals meet every target.

    `slo`: targets as texts (`cold_starts_per_1000=5`) or a mapping; `space`:
    `[TEMPLATE.]KEY=V1,V2` overrides of the default space. Runs go to dask
    as `sim.run_sweep`'s do (`workers=0`: in this process; so too when a script calls
    it outside `if __name__ == "__main__":`, where worker processes would run the
    script again). Raises RecommendError (or ScenarioError) before anything runs for
    bad input.
    """
    if replications < 2:
        raise RecommendError(f"replications must be >= 2 for confidence intervals, "
                             f"got {replications}")
    if per_round < 1 or max_rounds < 1:
        raise RecommendError("per_round and max_rounds must be >= 1")
    targets = as_targets(slo)
    src = read_source(source)
    scenario = src.scenario()
    names = [t.name for t in scenario.projects]
    overrides = [o if isinstance(o, SpaceOverride) else parse_space(str(o), names) for o in space]
    spaces = space_of(scenario, overrides)
    unknown = sorted({t.template for t in targets if t.template and t.template not in names})
    if unknown:
        raise RecommendError(f"--slo: no template named {unknown[0]!r} "
                             f"(templates: {', '.join(names)})")
    outcomes = {t.name: _outcome(t, scenario, spaces[t.name], targets_for(targets, t.name))
                for t in scenario.projects}
    _check_candidates(src, outcomes)
    queue = {name: _queue(o, o.targets) for name, o in outcomes.items()}
    queue_target = any(t.metric == "queue_wait_p99_s" for t in targets)
    base_doc = recording(src.document, queue_target)
    keep = bool(scenario.actions or scenario.keys)  # scripted calls may name any template
    seeds = [replication_seed(scenario.seed, r) for r in range(replications)]
    runs = rounds = 0
    in_process = (scheduler is None and workers == 0) or \
        in_process_instead("sim.recommend", workers, scheduler, client)
    context = (nullcontext(client) if client is not None or in_process
               else open_client(workers, scheduler))
    with context as active:
        while rounds < max_rounds:
            undecided = [n for n, o in outcomes.items() if o.recommended is None and
                         o.failure is None]
            if not undecided:
                break
            batch = {n: _take(queue[n], per_round) for n in undecided}
            if rounds == 0:
                for n in undecided:
                    if not outcomes[n].current.simulated and outcomes[n].current not in batch[n]:
                        batch[n].append(outcomes[n].current)
            slates = _slates(batch)
            calls, owners = [], []
            for slate in slates:
                choices = {n: c.choice for n, c in slate.items()}
                if keep:
                    choices = {**{n: o.current.choice for n, o in outcomes.items()}, **choices}
                doc = apply_choices(base_doc, choices, keep_others=keep)
                for seed in seeds:
                    calls.append(((doc, src.base_dir, seed), scenario.duration))
                    owners.append(slate)
            if active is None:
                figures = run_local(run_slate, calls, progress)
            else:
                figures = run_tasks(active, run_slate, calls, progress)
            for slate, measured in zip(owners, figures, strict=True):
                for n, cand in slate.items():
                    cand.runs.append(measured[n])
            runs += len(calls)
            rounds += 1
            for n in undecided:
                _judge(outcomes[n], queue[n], outcomes[n].targets, final=rounds >= max_rounds)
    for o in outcomes.values():
        if o.recommended is None and o.failure is None:
            _fail(o, o.targets, f"no choice was confirmed within {max_rounds} rounds")
    name = str(src.document.get("name", "scenario"))
    return Recommendation(name, targets, replications, outcomes, dict(src.document),
                          src.base_dir, runs, rounds)


def _outcome(template: Any, scenario: Any, choices: list[Choice], targets: list[Target]
             ) -> TemplateOutcome:
    model = TemplateModel(template, scenario)
    cands = []
    for choice in choices:
        prediction = model.predict(choice)
        cands.append(Candidate(template.name, choice, prediction, prediction.pruned_by(targets)))
    now = current_choice(template)
    current = next(c for c in cands if c.choice == now)
    return TemplateOutcome(template.name, template.count, targets, current, cands)


def _check_candidates(src: Source, outcomes: Mapping[str, TemplateOutcome]) -> None:
    """Every choice must make a valid scenario: refuse a bad space before anything runs."""
    widest = max(len(o.candidates) for o in outcomes.values())
    for i in range(widest):
        choices = {n: o.candidates[min(i, len(o.candidates) - 1)].choice
                   for n, o in outcomes.items()}
        try:
            parse_scenario(apply_choices(src.document, choices), source=src.name,
                           base_dir=src.base_dir)
        except ScenarioError as err:
            first = err.problems[0]
            where = f"{first.path}: " if first.path else ""
            label = "; ".join(f"{n}: {c.label()}" for n, c in choices.items())
            raise RecommendError(f"--space: {label}: {where}{first.message}") from None


def _queue(outcome: TemplateOutcome, targets: list[Target]) -> list[Candidate]:
    """Choices to simulate, cheapest predicted first; the least bad one if all are pruned.

    Choices the theory cannot tell apart (same cost, same figures: a pool that never
    queues, a maximum size no load reaches) are simulated once, as the one that changes
    the fewest of today's settings.
    """
    alive = [c for c in outcome.candidates if not c.pruned]
    if not alive:
        alive = [min(outcome.candidates, key=lambda c: (c.shortfall(targets), c.prediction.cost))]
    now = outcome.current.choice
    alive.sort(key=lambda c: (_price(c.prediction.cost), changes(c.choice, now), c.choice))
    seen: set[tuple] = set()
    out = []
    for c in alive:
        key = _signature(c.prediction, targets)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def changes(choice: Choice, now: Choice) -> int:
    """How many of today's settings a choice changes (timeout, size, pooler)."""
    return (int(choice.timeout_s != now.timeout_s)
            + int((choice.min_cu, choice.max_cu) != (now.min_cu, now.max_cu))
            + int(choice.pooler_enabled != now.pooler_enabled))


def _price(cost: float) -> float:
    """A predicted cost to 6 significant digits: a timeout no gap in the load ever reaches
    costs what never suspending costs, to within float noise."""
    return float(f"{cost:.6g}")


def _signature(p: Prediction, targets: list[Target]) -> tuple:
    """What the targets and the price see of a prediction (no figure and 0 look alike: a
    pool that never queues meets a queue-wait target as a direct connection does)."""
    return (_price(p.cost), *(round(p.figures.get(t.metric) or 0.0, 6) for t in targets))


def _take(queue: list[Candidate], n: int) -> list[Candidate]:
    out = []
    while queue and len(out) < n:
        c = queue.pop(0)
        if not c.simulated:
            out.append(c)
    return out


def _slates(batch: Mapping[str, list[Candidate]]) -> list[dict[str, Candidate]]:
    """The j-th slate holds the j-th candidate of each template that has one."""
    depth = max((len(v) for v in batch.values()), default=0)
    return [{n: cs[j] for n, cs in batch.items() if j < len(cs)} for j in range(depth)]


def _judge(outcome: TemplateOutcome, queue: list[Candidate], targets: list[Target],
           final: bool) -> None:
    confirmed = [c for c in outcome.candidates if c.confirmed(targets)]
    if confirmed:
        now = outcome.current.choice
        best = min(confirmed, key=lambda c: (c.cost, changes(c.choice, now), c.choice))
        cheaper_untried = [c for c in queue if not c.simulated
                           and _price(c.prediction.cost) < _price(best.prediction.cost)]
        if not cheaper_untried or final:
            outcome.recommended = best
            outcome.binding = _binding(outcome, best, targets)
        return
    if not [c for c in queue if not c.simulated]:
        _fail(outcome, targets, "no choice in the space meets every target")


def _binding(outcome: TemplateOutcome, best: Candidate, targets: list[Target]) -> list[Target]:
    """Targets that some cheaper choice misses: the ones that stop the saving going further."""
    cheaper = [c for c in outcome.candidates if c is not best and
               (c.cost if c.simulated else c.prediction.cost) < best.cost]
    return [t for t in targets if any(t in c.misses(targets) for c in cheaper)]


def _fail(outcome: TemplateOutcome, targets: list[Target], reason: str) -> None:
    tried = [c for c in outcome.candidates if c.simulated] or outcome.candidates
    closest = min(tried, key=lambda c: (c.shortfall(targets), c.cost))
    outcome.closest = closest
    outcome.failure = reason
