"""The scenario file as typed, validated data (pydantic v2).

Shapes, types and ranges are checked here, field by field, with unknown keys
refused and no silent coercion (no bool for a number, no "4" for 4). Rules
that need the whole document (plan caps, references, one read_write per
branch, instants inside the run) live in `sim.scenario.checks`, and
`sim.scenario.loader` runs both and reports every problem on one line each.

Durations are stored in seconds (floats) whatever the file wrote ("1h30m").
Defaults of the `engine:` section are read from `EngineConfig` itself, so
the schema and the engine cannot disagree about them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    PrivateAttr,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from sim.engine.config import AutoscalerConfig, ConnectionRecording, EngineConfig
from sim.rules.auth import check_auth_provider
from sim.rules.connections import AutoscalingConnections
from sim.rules.errors import ApiError
from sim.rules.operations import Action
from sim.rules.pricing import PRESETS, Pricing
from sim.rules.sizes import Plan
from sim.rules.timeouts import validate_suspend_timeout
from sim.scenario.durations import parse_bytes, parse_duration, parse_run_length
from sim.scenario.references import BRANCH_NAME, TEMPLATE_NAME, Reference, parse_call
from sim.workload import (
    ArrivalProcess,
    Bursty,
    DistKind,
    Distribution,
    Diurnal,
    Periodic,
    Poisson,
    Replay,
    SessionModel,
)
from sim.workload.weekly import weekly


def _positive(value: object) -> float:
    seconds = parse_duration(value)
    if seconds <= 0:
        raise ValueError("must be a duration > 0")
    return seconds


_AS_TEXT = WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "number"}]})
#: Seconds, written as a number or "1h30m"; >= 0.
Duration = Annotated[float, PlainValidator(parse_duration), _AS_TEXT]
PositiveDuration = Annotated[float, PlainValidator(_positive), _AS_TEXT]
Bytes = Annotated[float, PlainValidator(parse_bytes), _AS_TEXT]


def _run_length(value: object) -> float:
    seconds = parse_run_length(value)
    if seconds <= 0:
        raise ValueError("must be a duration > 0")
    return seconds


#: A run's length: "7d", "6h" (with a unit: a bare number is refused); > 0.
RunLength = Annotated[float, PlainValidator(_run_length), WithJsonSchema({"type": "string"})]


def _warm_up(value: object) -> float | Literal["auto"]:
    if value == "auto":
        return "auto"
    try:
        seconds = parse_duration(value)
    except ValueError as err:
        raise ValueError(f"must be auto or a duration ({err})") from None
    if seconds % 60:
        raise ValueError("must be auto or a whole number of minutes (the figures are per "
                         "minute)")
    return seconds


WarmUp = Annotated[float | Literal["auto"], PlainValidator(_warm_up), _AS_TEXT]
NonNegative = Annotated[float, Field(ge=0)]

PlanName = Literal["free", "launch", "scale", "business"]


def _off_word(value: object) -> object:
    # YAML 1.1 loaders (yaml.safe_load) read an unquoted `off` (or `no`) as False; the
    # scenario's own loader keeps the word. Both mean the same setting.
    return "off" if value is False else value


#: how much of a kind of row a run records: `off` is also YAML 1.1's False
Recording = Annotated[Literal["all", "sampled", "off"], BeforeValidator(_off_word)]
EventRecording = Annotated[Literal["all", "off"], BeforeValidator(_off_word)]

_ENGINE = EngineConfig()
DEFAULT_START = datetime(2026, 1, 5, tzinfo=UTC)
MAX_COUNT = 1_000_000  # projects from one template; a sanity bound, not a rule of the specification


def api_reason(err: ApiError) -> str:
    """An ApiError's message without the `field: ` prefix the rules put in front."""
    prefix = f"{err.field}: " if err.field else ""
    return err.message[len(prefix):] if prefix and err.message.startswith(prefix) else err.message


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class _DistributionShape(Spec):
    dist: Literal["fixed", "exponential", "lognormal"]
    sigma: NonNegative | None = None  # lognormal only; default 1.0

    @model_validator(mode="after")
    def _sigma_for_lognormal_only(self) -> _DistributionShape:
        if self.sigma is not None and self.dist != "lognormal":
            raise ValueError(f"sigma applies to dist: lognormal only, not {self.dist}")
        return self

    def _make(self, mean: float) -> Distribution:
        return Distribution(DistKind(self.dist), mean, 1.0 if self.sigma is None else self.sigma)


class DistributionSpec(_DistributionShape):
    """{dist, mean_s, sigma}: see `sim.workload.Distribution`."""

    mean_s: NonNegative

    def to_distribution(self) -> Distribution:
        return self._make(self.mean_s)

    @classmethod
    def of(cls, d: Distribution) -> DistributionSpec:
        sigma = d.sigma if d.dist.value == "lognormal" else None
        return cls(dist=d.dist.value, mean_s=d.mean_s, sigma=sigma)


class BytesDistributionSpec(_DistributionShape):
    """{dist, mean_bytes, sigma}: a Distribution whose "seconds" are bytes ("2GiB" or a number)."""

    mean_bytes: Bytes

    def to_distribution(self) -> Distribution:
        return self._make(self.mean_bytes)


# ---- arrivals: a union told apart by `kind` -------------------------------------------------


def _weekly(value: object) -> tuple[float, ...]:
    """A weekly cycle: {weekday: F, weekend: F}, or seven factors, Monday first (UTC days)."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"weekday", "weekend"})
        if unknown or set(value) != {"weekday", "weekend"}:
            raise ValueError("write {weekday: F, weekend: F} or seven factors, Monday first"
                             + (f" (unknown key {unknown[0]!r})" if unknown else ""))
        days = [value["weekday"]] * 5 + [value["weekend"]] * 2
    elif isinstance(value, list):
        if len(value) != 7:
            raise ValueError(f"needs seven factors, Monday first (UTC days), got {len(value)}")
        days = value
    else:
        raise ValueError(f"write {{weekday: F, weekend: F}} or seven factors, Monday first; "
                         f"got {value!r}")
    out = []
    for v in days:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v < 0:
            raise ValueError(f"a factor must be a finite number >= 0, got {v!r}")
        out.append(float(v))
    return tuple(out)


#: one factor per UTC day of the week, Monday first, that multiplies the rate
WeeklyFactors = Annotated[tuple[float, ...], PlainValidator(_weekly), WithJsonSchema(
    {"anyOf": [{"type": "object"}, {"type": "array", "items": {"type": "number"}}]})]


class _ArrivalSpec(Spec):
    """What every arrival kind has: an optional weekly cycle over its rate."""

    weekly: WeeklyFactors | None = None

    def to_process(self, start: datetime) -> ArrivalProcess:
        start = start.replace(tzinfo=UTC) if start.tzinfo is None else start.astimezone(UTC)
        monday = datetime.combine(start.date(), time(), tzinfo=UTC) - timedelta(
            days=start.weekday())
        return weekly(self._process(start), self.weekly, (start - monday).total_seconds())

    def _process(self, start: datetime) -> ArrivalProcess:
        raise NotImplementedError


class _ThinnedOnly(_ArrivalSpec):
    """A kind without a rate to multiply (a job, a trace): its days can only be thinned."""

    @model_validator(mode="after")
    def _factors_at_most_one(self) -> _ThinnedOnly:
        if self.weekly is not None and max(self.weekly) > 1:
            raise ValueError(f"weekly: a {self.kind} source can be thinned, not "  # type: ignore[attr-defined]
                             f"multiplied: its factors must be at most 1")
        return self


class PoissonSpec(_ArrivalSpec):
    kind: Literal["poisson"]
    per_hour: NonNegative

    def _process(self, start: datetime) -> ArrivalProcess:
        return Poisson(self.per_hour)


class DiurnalSpec(_ArrivalSpec):
    kind: Literal["diurnal"]
    peak_per_hour: NonNegative | None = None
    trough_per_hour: NonNegative | None = None
    peak_hour: Annotated[float, Field(ge=0, lt=24)] | None = None
    hourly: Annotated[list[NonNegative], Field(min_length=24, max_length=24)] | None = None

    @model_validator(mode="after")
    def _one_profile(self) -> DiurnalSpec:
        cosine = (self.peak_per_hour, self.trough_per_hour, self.peak_hour)
        if self.hourly is not None and any(v is not None for v in cosine):
            raise ValueError("give hourly (24 rates) or peak_per_hour/trough_per_hour/peak_hour")
        if self.hourly is None and any(v is None for v in cosine):
            raise ValueError("give peak_per_hour, trough_per_hour and peak_hour, or hourly")
        if self.hourly is None and (self.trough_per_hour or 0) > (self.peak_per_hour or 0):
            raise ValueError("trough_per_hour is above peak_per_hour")
        return self

    def _process(self, start: datetime) -> ArrivalProcess:
        start = start.replace(tzinfo=UTC) if start.tzinfo is None else start.astimezone(UTC)
        midnight = datetime.combine(start.date(), time(), tzinfo=UTC)
        offset = (start - midnight).total_seconds()
        if self.hourly is not None:
            return Diurnal(hourly=tuple(self.hourly), start_hour_offset_s=offset)
        return Diurnal(self.peak_per_hour, self.trough_per_hour, self.peak_hour, None, offset)


class BurstySpec(_ArrivalSpec):
    kind: Literal["bursty"]
    on_per_hour: NonNegative
    off_per_hour: NonNegative
    mean_on: PositiveDuration
    mean_off: PositiveDuration

    def _process(self, start: datetime) -> ArrivalProcess:
        return Bursty(self.on_per_hour, self.off_per_hour, self.mean_on, self.mean_off)


class PeriodicSpec(_ThinnedOnly):
    kind: Literal["periodic"]
    every: PositiveDuration
    offset: Duration = 0.0
    jitter: Duration = 0.0

    def _process(self, start: datetime) -> ArrivalProcess:
        return Periodic(self.every, self.offset, self.jitter)


class ReplaySpec(_ThinnedOnly):
    """A CSV trace; a relative path is read from the scenario file's directory."""

    kind: Literal["replay"]
    path: Annotated[str, Field(min_length=1)]
    format: Literal["timestamps", "per_minute"] | None = None  # None: told by the header
    _resolved: Path | None = PrivateAttr(default=None)
    _loaded: dict[datetime, Replay] = PrivateAttr(default_factory=dict)

    def resolve(self, base_dir: Path | None) -> Path:
        path = Path(self.path)
        self._resolved = path if path.is_absolute() or base_dir is None else base_dir / path
        return self._resolved

    def _process(self, start: datetime) -> ArrivalProcess:
        # read once per start instant: a template with count 500 shares one trace
        if start not in self._loaded:
            path = self._resolved or Path(self.path)
            self._loaded[start] = Replay.from_csv(path, start, self.format)
        return self._loaded[start]


ArrivalSpec = Annotated[
    PoissonSpec | DiurnalSpec | BurstySpec | PeriodicSpec | ReplaySpec,
    Field(discriminator="kind"),
]
ARRIVAL_KINDS = frozenset({"poisson", "diurnal", "bursty", "periodic", "replay"})


# ---- computes, branches, projects -----------------------------------------------------------


class WorkloadSpec(Spec):
    arrivals: ArrivalSpec
    session: DistributionSpec
    cpu_per_session: NonNegative = 0.0
    memory_gb_per_session: NonNegative = 0.0
    temp_bytes_per_session: BytesDistributionSpec | None = None


class SizeSpec(Spec):
    cu: float


class AutoscalingSpec(Spec):
    min_cu: float
    max_cu: float


DEFAULT_AUTOSCALING = AutoscalingSpec(min_cu=0.25, max_cu=2.0)


class ComputeSpec(Spec):
    type: Literal["read_write", "read_only"]
    size: SizeSpec | None = None  # fixed size; exclusive with autoscaling
    autoscaling: AutoscalingSpec | None = None  # neither given: 0.25 to 2 CU
    suspend_timeout_seconds: int = 0
    pooler_enabled: bool = False
    pool_size: Annotated[int, Field(ge=1)] | None = None
    workload: WorkloadSpec | None = None

    @field_validator("suspend_timeout_seconds")
    @classmethod
    def _timeout_rule(cls, value: int) -> int:
        try:
            validate_suspend_timeout(value)
        except ApiError as err:
            raise ValueError(api_reason(err)) from None
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ComputeSpec:
        if self.size is not None and self.autoscaling is not None:
            raise ValueError("give size (fixed) or autoscaling, not both")
        if self.pool_size is not None and not self.pooler_enabled:
            raise ValueError("pool_size needs pooler_enabled: true")
        return self

    @property
    def min_cu(self) -> float:
        if self.size is not None:
            return self.size.cu
        return (self.autoscaling or DEFAULT_AUTOSCALING).min_cu

    @property
    def max_cu(self) -> float:
        if self.size is not None:
            return self.size.cu
        return (self.autoscaling or DEFAULT_AUTOSCALING).max_cu

    def arrival_process(self, start: datetime) -> ArrivalProcess | None:
        """The arrivals of this compute's workload; None when it has none."""
        return None if self.workload is None else self.workload.arrivals.to_process(start)

    def session_model(self) -> SessionModel | None:
        w = self.workload
        if w is None:
            return None
        temp = w.temp_bytes_per_session
        return SessionModel(
            duration=w.session.to_distribution(),
            cpu_per_session=w.cpu_per_session,
            memory_gb_per_session=w.memory_gb_per_session,
            temp_bytes=None if temp is None else temp.to_distribution(),
        )


class BranchSpec(Spec):
    name: Annotated[str, Field(pattern=f"^{BRANCH_NAME}$", max_length=64)]
    parent: str | None = None  # a branch declared earlier; default the first branch
    computes: list[ComputeSpec] = []

    def computes_of(self, compute_type: str) -> list[ComputeSpec]:
        return [c for c in self.computes if c.type == compute_type]


class SignupsSpec(Spec):
    """Users signing up at the auth provider of each project: a Poisson process."""

    per_hour: NonNegative


class AuthSpec(Spec):
    """Managed auth of each project: the integration at t=0 (as POST /projects/auth/create,
    on the branch's `svcdb`), then sign-ups through the verb of POST /projects/auth/user."""

    provider: str = "stack"
    branch: str | None = None  # default: the first (default) branch
    signups: SignupsSpec | None = None

    @field_validator("provider")
    @classmethod
    def _supported(cls, value: str) -> str:
        try:
            return check_auth_provider(value)
        except ApiError as err:
            raise ValueError(api_reason(err)) from None


def _pricing(value: object) -> str | Pricing:
    """A preset's name (kept as written), or {per_cu_hour: P, included_cu_hours: H}."""
    presets = ", ".join(PRESETS)
    if isinstance(value, str):
        if value not in PRESETS:
            raise ValueError(f"{value!r} is not a preset (one of {presets}); or write "
                             f"{{per_cu_hour: P, included_cu_hours: H}}")
        return value
    if not isinstance(value, dict):
        raise ValueError(f"write a preset ({presets}) or {{per_cu_hour: P, "
                         f"included_cu_hours: H}}, got {value!r}")
    unknown = sorted(set(value) - {"per_cu_hour", "included_cu_hours"})
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (per_cu_hour, included_cu_hours)")
    if "per_cu_hour" not in value:
        raise ValueError("per_cu_hour is required (and included_cu_hours, per project and "
                         "month, is 0 unless given)")
    numbers = []
    for key in ("per_cu_hour", "included_cu_hours"):
        v = value.get(key, 0.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v < 0:
            raise ValueError(f"{key} must be a finite number >= 0, got {v!r}")
        numbers.append(float(v))
    return Pricing(*numbers)


#: a template's compute terms: a preset of the real service's public plans, or written out
PricingField = Annotated[str | Pricing, PlainValidator(_pricing), WithJsonSchema(
    {"anyOf": [{"type": "string", "enum": list(PRESETS)}, {"type": "object"}]})]


class ProjectSpec(Spec):
    """A project template; `count` projects are made from it."""

    name: Annotated[str, Field(pattern=f"^{TEMPLATE_NAME}$", max_length=63)]
    count: Annotated[int, Field(ge=1, le=MAX_COUNT)] = 1
    plan: PlanName | None = None  # default: the scenario's plan
    # what its compute costs: a preset of the real service's public plans, or written out;
    # default: the scenario's price_per_cu_hour, nothing included
    pricing: PricingField | None = None
    history_retention: Duration = 86_400.0
    branches: Annotated[list[BranchSpec], Field(min_length=1)]
    auth: AuthSpec | None = None

    @model_validator(mode="after")
    def _auth_on_a_declared_branch(self) -> ProjectSpec:
        wanted = self.auth.branch if self.auth is not None else None
        if wanted is not None and self.branch(wanted) is None:
            names = ", ".join(b.name for b in self.branches)
            raise ValueError(f"auth.branch: {wanted!r} is not a branch of this project "
                             f"(declared: {names})")
        return self

    @property
    def auth_branch(self) -> str | None:
        """The branch the `auth:` integration is bound to; None without `auth:`."""
        if self.auth is None:
            return None
        return self.auth.branch or self.branches[0].name

    def branch(self, name: str) -> BranchSpec | None:
        return next((b for b in self.branches if b.name == name), None)

    def parent_of(self, branch: BranchSpec) -> str | None:
        """The parent branch's name; None for the default (first) branch."""
        if branch is self.branches[0]:
            return None
        return branch.parent or self.branches[0].name


@dataclass(frozen=True, eq=False)
class ProjectInstance:
    template: ProjectSpec
    index: int
    key: str  # "shop[3]": what references and project-scoped keys name


# ---- engine, faults, keys, releases, actions ------------------------------------------------


class AutoscalerSpec(Spec):
    target_cpu_utilisation: Annotated[float, Field(gt=0, le=1)] = (
        _ENGINE.autoscaler.target_cpu_utilisation
    )
    target_memory_utilisation: Annotated[float, Field(gt=0, le=1)] = (
        _ENGINE.autoscaler.target_memory_utilisation
    )
    reaction_delay: Duration = _ENGINE.autoscaler.reaction_delay_s


class EngineSpec(Spec):
    """Maps one to one onto `EngineConfig`; its defaults are EngineConfig's."""

    cold_start: DistributionSpec = Field(
        default_factory=lambda: DistributionSpec.of(_ENGINE.cold_start)
    )
    operation_durations: dict[str, DistributionSpec] = {}  # overrides, per action
    pool_share: Annotated[float, Field(gt=0, le=1)] = _ENGINE.pool_share
    pool_queue_timeout: Duration = _ENGINE.pool_queue_timeout_s
    autoscaling_connections: Literal["max", "min"] = _ENGINE.autoscaling_connections.value
    autoscaler: AutoscalerSpec = AutoscalerSpec()
    # null turns the behaviour off
    check_availability_every: PositiveDuration | None = _ENGINE.check_availability_every_s
    detach_after: PositiveDuration | None = _ENGINE.detach_after_s
    archive_after: PositiveDuration | None = _ENGINE.archive_after_s
    user_sync_delay: Duration = _ENGINE.user_sync_delay_s

    @field_validator("operation_durations")
    @classmethod
    def _known_actions(cls, value: dict[str, DistributionSpec]) -> dict[str, DistributionSpec]:
        names = sorted(a.value for a in Action if a is not Action.START_COMPUTE)
        for key in value:
            if key == Action.START_COMPUTE.value:
                raise ValueError("start_compute takes its duration from engine.cold_start")
            if key not in names:
                raise ValueError(f"unknown action {key!r} (one of {', '.join(names)})")
        return value


class OutageSpec(Spec):
    at: Duration
    duration: PositiveDuration


class FaultsSpec(Spec):
    operation_failure_rate: Annotated[float, Field(ge=0, lt=1)] = 0.0
    retry_backoff: Duration = 5.0
    outages: list[OutageSpec] = []  # the API answers 503 (HTTP layer)
    extra_latency_ms: NonNegative = 0.0


class KeySpec(Spec):
    key: Annotated[str, Field(min_length=16)]
    kind: Literal["personal", "organization", "project"]
    project: str | None = None  # kind project only: "shop" (= shop[0]) or "shop[2]"

    @model_validator(mode="after")
    def _project_for_project_keys(self) -> KeySpec:
        if (self.kind == "project") != (self.project is not None):
            raise ValueError("a key names a project (project: <template>) iff kind is project")
        return self


class ReleaseSpec(Spec):
    at: Duration
    version: Annotated[str, Field(min_length=1)]


class ActionSpec(Spec):
    at: Duration
    call: str  # "METHOD /path" with {references}
    body: dict[str, Any] | None = None

    @field_validator("call")
    @classmethod
    def _call_shape(cls, value: str) -> str:
        parse_call(value)
        return value

    @property
    def method(self) -> str:
        return parse_call(self.call)[0]

    @property
    def path(self) -> str:
        return parse_call(self.call)[1]

    def references(self) -> list[Reference]:
        return parse_call(self.call)[2]


# ---- the scenario ---------------------------------------------------------------------------


class Scenario(Spec):
    name: Annotated[str, Field(min_length=1)]
    seed: Annotated[int, Field(ge=0)] = 0
    start: datetime = DEFAULT_START  # UTC; a naive instant is taken as UTC
    duration: RunLength  # seconds; written with a unit
    # simulated before `start` and left out of every figure: "auto" (see `warm_up_s`) or
    # a duration in whole minutes; 0 shows the fleet's creation at the first instant
    warm_up: WarmUp = "auto"
    plan: PlanName = "launch"
    price_per_cu_hour: NonNegative = 0.16
    region_id: Annotated[str, Field(min_length=1)] = "aws-us-east-2"
    record_connections: Recording = "all"
    # operations, state intervals and wakes as rows ("all"), or only the per-minute fleet
    # series and per-compute cold-start waits ("off"): for fleets of thousands of computes
    record_events: EventRecording = "all"
    connection_sample_rate: Annotated[float, Field(gt=0, le=1)] = 0.01
    engine: EngineSpec = EngineSpec()
    faults: FaultsSpec = FaultsSpec()
    keys: list[KeySpec] = []
    releases: list[ReleaseSpec] = []
    projects: Annotated[list[ProjectSpec], Field(min_length=1)]
    actions: list[ActionSpec] = []

    @field_validator("start", mode="before")
    @classmethod
    def _parse_start(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.strip())
            except ValueError:
                raise ValueError(f"not an ISO 8601 instant: {value!r}") from None
        if isinstance(value, date) and not isinstance(value, datetime):
            return datetime.combine(value, time())
        return value

    @field_validator("start")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        try:
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        except OverflowError:
            raise ValueError(f"{value.isoformat()} is out of range in UTC") from None

    @property
    def warm_up_s(self) -> float:
        """Seconds simulated before `start`, in no figure (`sim.scenario.warm_up`)."""
        from sim.scenario.warm_up import default_warm_up_s  # it reads the scenario

        return default_warm_up_s(self) if self.warm_up == "auto" else self.warm_up

    def template(self, name: str) -> ProjectSpec | None:
        return next((p for p in self.projects if p.name == name), None)

    def plan_of(self, template: ProjectSpec) -> Plan:
        return Plan(template.plan or self.plan)

    def pricing_of(self, template: ProjectSpec) -> Pricing:
        """The template's compute terms (`sim.rules.pricing`)."""
        p = template.pricing
        if p is None:
            return Pricing(self.price_per_cu_hour)
        return PRESETS[p] if isinstance(p, str) else p

    def instances(self) -> list[ProjectInstance]:
        """Every project the run creates: template order, then index."""
        return [
            ProjectInstance(p, i, f"{p.name}[{i}]") for p in self.projects for i in range(p.count)
        ]

    def project_count(self) -> int:
        """How many projects the run creates (`len(instances())`, without making them)."""
        return sum(p.count for p in self.projects)

    def compute_count(self) -> int:
        """How many computes the run's projects declare."""
        return sum(p.count * sum(len(b.computes) for b in p.branches) for p in self.projects)

    def engine_config(self) -> EngineConfig:
        e, f = self.engine, self.faults
        durations = dict(_ENGINE.operation_durations)
        durations.update({Action(k): v.to_distribution() for k, v in e.operation_durations.items()})
        return EngineConfig(
            cold_start=e.cold_start.to_distribution(),
            operation_durations=durations,
            operation_failure_rate=f.operation_failure_rate,
            retry_backoff_s=f.retry_backoff,
            pool_share=e.pool_share,
            pool_queue_timeout_s=e.pool_queue_timeout,
            autoscaling_connections=AutoscalingConnections(e.autoscaling_connections),
            autoscaler=AutoscalerConfig(
                target_cpu_utilisation=e.autoscaler.target_cpu_utilisation,
                target_memory_utilisation=e.autoscaler.target_memory_utilisation,
                reaction_delay_s=e.autoscaler.reaction_delay,
            ),
            check_availability_every_s=e.check_availability_every,
            detach_after_s=e.detach_after,
            archive_after_s=e.archive_after,
            user_sync_delay_s=e.user_sync_delay,
            record_connections=ConnectionRecording(self.record_connections),
            record_events=self.record_events == "all",
            connection_sample_rate=self.connection_sample_rate,
        )
