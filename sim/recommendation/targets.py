"""Service-level targets a planner states: `--slo NAME=LIMIT`, each an upper bound.

    cold_starts_per_1000=5        cold starts per 1,000 sessions
    cold_start_share=0.5%         the same as a share of connections (0.5 % = 5 per 1,000)
    wake_p99=2s                   99th percentile of the wait a cold start costs a connection
    refused=0.1%                  connections refused with 53300 (too many connections)
    queue_wait_p99=1s             99th percentile of the wait in the pooler's queue

`TEMPLATE.NAME=LIMIT` bounds one template only and replaces, for it, a
target of the same name given for all (a hobby tier may accept what a busy
tier may not).

A target holds for a setting when the upper end of the setting's confidence
interval is at or below the limit. A figure a setting never produces (no
cold starts, so no cold-start wait; no pooler, so no queue) meets its target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sim.scenario.durations import parse_duration


class RecommendError(ValueError):
    """A target, a search space or a scenario the recommender cannot use; one line."""


@dataclass(frozen=True)
class Metric:
    key: str  # the figure's key in predictions and simulated results
    label: str  # how a table heads it
    kind: str  # format of sim.metrics.summary.format_value: num, pct, seconds


#: every figure a target can bound, in the order tables show them
METRICS: dict[str, Metric] = {
    "cold_starts_per_1000": Metric("cold_starts_per_1000", "cold starts / 1,000 sessions", "num"),
    "wake_p99_s": Metric("wake_p99_s", "cold-start wait p99", "seconds"),
    "refused_share": Metric("refused_share", "refused connections", "pct"),
    "queue_wait_p99_s": Metric("queue_wait_p99_s", "pooler queue wait p99", "seconds"),
}

#: names a planner may write -> (metric, how the written value becomes the metric's unit)
_NAMES: dict[str, tuple[str, str]] = {
    "cold_starts_per_1000": ("cold_starts_per_1000", "number"),
    "cold_starts": ("cold_starts_per_1000", "number"),
    "cold_start_share": ("cold_starts_per_1000", "share_per_1000"),
    "wake_p99": ("wake_p99_s", "seconds"),
    "wake_p99_s": ("wake_p99_s", "seconds"),
    "cold_start_wait_p99": ("wake_p99_s", "seconds"),
    "refused": ("refused_share", "share"),
    "refused_share": ("refused_share", "share"),
    "queue_wait_p99": ("queue_wait_p99_s", "seconds"),
    "queue_wait_p99_s": ("queue_wait_p99_s", "seconds"),
}


@dataclass(frozen=True)
class Target:
    metric: str  # a key of METRICS
    limit: float
    template: str | None = None  # None: every template

    @property
    def label(self) -> str:
        return METRICS[self.metric].label

    @property
    def kind(self) -> str:
        return METRICS[self.metric].kind

    def met_by(self, value: float | None) -> bool:
        return value is None or value <= self.limit

    def text(self) -> str:
        from sim.metrics.summary import format_value

        where = f"{self.template}: " if self.template else ""
        return f"{where}{self.label} <= {format_value(self.limit, self.kind)}"


def _number(name: str, text: str, unit: str) -> float:
    raw = text.strip()
    if unit == "number" and raw.endswith("%"):
        raise RecommendError(f"--slo {name}={text}: a count per 1,000 sessions, not a "
                             f"percentage (write cold_start_share={text})")
    try:
        if unit == "seconds":
            value = float(parse_duration(raw))
        elif raw.endswith("%"):
            value = float(raw[:-1]) / 100.0
        else:
            value = float(raw)
    except (ValueError, TypeError):
        raise RecommendError(f"--slo {name}={text}: not a number") from None
    if not value >= 0 or value == float("inf"):
        raise RecommendError(f"--slo {name}={text}: must be a finite number >= 0")
    if unit in ("share", "share_per_1000") and value > 1:
        raise RecommendError(f"--slo {name}={text}: a share is at most 100 %")
    return 1000.0 * value if unit == "share_per_1000" else value


def parse_target(text: str) -> Target:
    """`NAME=LIMIT` (or `NAME<=LIMIT`) -> Target; raises RecommendError naming the target."""
    name, sep, value = text.replace("<=", "=", 1).partition("=")
    template, _, name = name.strip().rpartition(".")
    if not sep or not name or not value.strip():
        raise RecommendError(f"--slo {text}: write [TEMPLATE.]NAME=LIMIT "
                             f"(e.g. cold_starts_per_1000=5)")
    if name not in _NAMES:
        known = ", ".join(sorted(_NAMES))
        raise RecommendError(f"--slo {text}: unknown target {name!r} (one of {known})")
    metric, unit = _NAMES[name]
    return Target(metric, _number(name, value, unit), template or None)


def as_targets(slo: Sequence[Target | str] | Mapping[str, float | str]) -> list[Target]:
    """Targets from texts, Target objects or a mapping name -> limit; one per metric (and
    template)."""
    if isinstance(slo, Mapping):
        items = [t for t in (parse_target(f"{k}={v}") for k, v in slo.items())]
    else:
        items = [t if isinstance(t, Target) else parse_target(str(t)) for t in slo]
    if not items:
        raise RecommendError("no service-level target: give at least one --slo NAME=LIMIT")
    seen: dict[tuple[str | None, str], Target] = {}
    for t in items:
        if (t.template, t.metric) in seen:
            where = f" for {t.template}" if t.template else ""
            raise RecommendError(f"--slo: {t.label} is bounded twice{where}")
        seen[(t.template, t.metric)] = t
    return sorted(seen.values(), key=lambda t: (t.template or "", list(METRICS).index(t.metric)))


def targets_for(targets: Sequence[Target], template: str) -> list[Target]:
    """The targets one template must meet: its own, and the general ones it does not
    replace, in the order of METRICS."""
    own = {t.metric: t for t in targets if t.template == template}
    general = {t.metric: t for t in targets if t.template is None}
    merged = {**general, **own}
    return [merged[m] for m in METRICS if m in merged]
