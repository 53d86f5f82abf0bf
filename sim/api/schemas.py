"""Request and response bodies of the API, as pydantic models: the OpenAPI document.

Requests refuse unknown fields and take values in their JSON types only (no
"5" for 5); fields of the official document that a model does not declare
are accepted, checked and kept (`documented`). They check shapes, never the
rules of the specification: sizes, timeouts, states and the one-primary rule are the
engine's, so a value of the right type always reaches the control plane,
which accepts it or says why not.
Field names and shapes follow the real API v2 (and the official client's
models), so real clients parse every answer.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from sim.api.documented import ShapeError, as_json_schema, check, documented_fields
from sim.rules.operations import Action
from sim.rules.states import ComputeState, ComputeType, OperationStatus

Number = Annotated[float, Field(strict=True)]  # a JSON number (integers too), never a string


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # a default, not a factory: pydantic inspects a factory's signature on every model made
    _documented: dict[str, Any] = PrivateAttr(default={})  # (copied for each)

    @model_validator(mode="wrap")
    @classmethod
    def _documented_fields(cls, data: Any, handler: Any) -> Any:
        # the document's fields this model does not declare are set aside, checked and
        # kept; whatever is left goes through the model, which refuses unknown fields
        known = documented_fields(cls.__name__)
        if isinstance(data, dict):  # null only where the document says a field is nullable
            for name, value in data.items():
                if value is None and not known.get(name, {}).get("nullable"):
                    raise PydanticCustomError("documented_field", "{reason}",
                                              {"field": name, "reason": "must not be null"})
        kept: dict[str, Any] = {}
        if known and isinstance(data, dict):
            declared = {f.alias or name for name, f in cls.model_fields.items()}
            for name in [k for k in data if k in known and k not in declared]:
                try:
                    _check_unicode(data[name])
                    check(data[name], known[name], name)
                except ShapeError as e:
                    raise PydanticCustomError("documented_field", "{reason}",
                                              {"field": e.path, "reason": e.reason}) from None
                except ValueError as e:
                    raise PydanticCustomError("documented_field", "{reason}",
                                              {"field": name, "reason": str(e)}) from None
                kept[name] = data[name]
            data = {k: v for k, v in data.items() if k not in kept}
        model = handler(data)
        model._documented = kept
        return model

    @property
    def documented(self) -> dict[str, Any]:
        """The document's fields the client sent that this model does not model."""
        return self._documented

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        # the server's own OpenAPI document lists the documented fields it accepts
        schema = handler(core_schema)
        target = handler.resolve_ref_schema(schema)
        for name, shape in documented_fields(cls.__name__).items():
            target.setdefault("properties", {}).setdefault(name, {
                **as_json_schema(shape), "description": "kept and answered back, not modelled"})
        return schema

    @field_validator("*")
    @classmethod
    def _unicode_text(cls, value: Any) -> Any:
        # JSON's "\ud800" decodes to a lone surrogate, which no UTF-8 answer can carry
        # (a 500 after the change was made, found by fuzzing): refuse it up front
        _check_unicode(value)
        return value


def _check_unicode(value: Any) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("not valid Unicode text (a lone surrogate)") from None
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_unicode(k)
            _check_unicode(v)
    elif isinstance(value, list):
        for v in value:
            _check_unicode(v)


# ---- requests --------------------------------------------------------------------------------


class EndpointSettings(Body):
    pg_settings: dict[str, str] | None = None
    pgbouncer_settings: dict[str, str] | None = None


class EndpointFields(Body):
    autoscaling_limit_min_cu: Number | None = None
    autoscaling_limit_max_cu: Number | None = None
    suspend_timeout_seconds: StrictInt | None = Field(
        None, description="0 = default (300 s), -1 = never suspend, otherwise 60..604800")
    pooler_enabled: StrictBool | None = None
    pooler_mode: StrictStr | None = None
    settings: EndpointSettings | None = None
    disabled: StrictBool | None = None
    passwordless_access: StrictBool | None = None
    provisioner: StrictStr | None = None
    name: Annotated[StrictStr, Field(min_length=1, max_length=64)] | None = None
    pool_size: StrictInt | None = Field(
        None, description="simulator: server connections of the pooler (default: a share of "
                          "max_connections)")
    region_id: StrictStr | None = None


class EndpointCreate(EndpointFields):
    branch_id: StrictStr
    type: ComputeType


class EndpointUpdate(EndpointFields):
    branch_id: StrictStr | None = Field(None, description="move the compute to this branch")


class EndpointCreateRequest(Body):
    endpoint: EndpointCreate


class EndpointUpdateRequest(Body):
    endpoint: EndpointUpdate


class BranchEndpoint(EndpointFields):
    type: ComputeType


class BranchCreate(Body):
    name: StrictStr | None = None
    parent_id: StrictStr | None = None
    protected: StrictBool | None = None


class BranchCreateRequest(Body):
    branch: BranchCreate | None = None
    endpoints: list[BranchEndpoint] | None = None
    annotation_value: dict[str, StrictStr] | None = Field(
        None, description="labels of the branch, returned as its `annotation`")


class DefaultEndpointSettings(Body):
    pg_settings: dict[str, str] | None = None
    pgbouncer_settings: dict[str, str] | None = None
    autoscaling_limit_min_cu: Number | None = None
    autoscaling_limit_max_cu: Number | None = None
    suspend_timeout_seconds: StrictInt | None = None


class ProjectBranch(Body):
    name: StrictStr | None = None
    role_name: StrictStr | None = Field(None, description="owner role (default neondb_owner)")
    database_name: StrictStr | None = Field(None, description="database (default neondb)")


class ProjectCreate(Body):
    name: StrictStr | None = None
    region_id: StrictStr | None = None
    pg_version: StrictInt | None = None
    history_retention_seconds: StrictInt | None = None
    default_endpoint_settings: DefaultEndpointSettings | None = None
    autoscaling_limit_min_cu: Number | None = None
    autoscaling_limit_max_cu: Number | None = None
    provisioner: StrictStr | None = None
    branch: ProjectBranch | None = None
    org_id: StrictStr | None = None
    plan: StrictStr | None = Field(None, description="simulator: free, launch, scale, business")


class ProjectCreateRequest(Body):
    project: ProjectCreate


class ProjectUpdate(Body):
    name: StrictStr | None = None
    history_retention_seconds: StrictInt | None = None


class ProjectUpdateRequest(Body):
    project: ProjectUpdate


# ---- /_sim requests --------------------------------------------------------------------------


#: the most simulated time one /_sim call may span (ten years): past some
#: thousands of years an instant no longer fits a timestamp (a 500, found by fuzzing)
MAX_SIM_SPAN_S = 10 * 365 * 86_400
SimSeconds = Annotated[float, Field(strict=True, ge=0, le=MAX_SIM_SPAN_S)]


class AdvanceRequest(Body):
    seconds: SimSeconds


class ConnectionsRequest(Body):
    project_id: StrictStr
    endpoint_id: StrictStr
    count: StrictInt = 1
    duration_seconds: Number = 60.0


class OutageRequest(Body):
    start_in_seconds: SimSeconds = 0.0
    duration_seconds: Annotated[float, Field(strict=True, gt=0, le=MAX_SIM_SPAN_S)]


#: the most latency /_sim/faults injects into each API call (a minute)
MAX_EXTRA_LATENCY_MS = 60_000


class FaultsRequest(Body):
    operation_failure_rate: Annotated[float, Field(strict=True, ge=0, lt=1)] | None = None
    extra_latency_ms: Annotated[float, Field(strict=True, ge=0, le=MAX_EXTRA_LATENCY_MS)] | None = None
    outage: OutageRequest | None = Field(
        None, description="replaces the outage windows; null or absent keeps them")
    clear_outages: StrictBool = False


# ---- responses -------------------------------------------------------------------------------


class Out(BaseModel):
    # a serializer that drifts from these shapes fails loudly in the tests
    model_config = ConfigDict(extra="forbid")


class ErrorBody(Out):
    code: str
    message: str
    request_id: str | None = None


class OperationOut(Out):
    id: str
    project_id: str
    branch_id: str | None = None
    endpoint_id: str | None = None
    action: Action
    status: OperationStatus
    failures_count: int
    created_at: str
    updated_at: str
    total_duration_ms: int
    error: str | None = None
    retry_at: str | None = None


class EndpointOut(Out):
    id: str
    name: str | None = None
    host: str
    proxy_host: str
    project_id: str
    branch_id: str
    region_id: str
    type: ComputeType
    current_state: ComputeState
    pending_state: ComputeState | None = None
    autoscaling_limit_min_cu: float
    autoscaling_limit_max_cu: float
    settings: dict[str, Any]
    pooler_enabled: bool
    pooler_mode: str
    disabled: bool
    passwordless_access: bool
    creation_source: str
    created_at: str
    updated_at: str
    last_active: str | None = None
    suspended_at: str | None = None
    suspend_timeout_seconds: int
    provisioner: str
    compute_release_version: str | None = None


class BranchOut(Out):
    id: str
    project_id: str
    parent_id: str | None = None
    name: str
    current_state: str
    pending_state: str | None = None
    state_changed_at: str
    creation_source: str
    default: bool
    primary: bool
    protected: bool
    cpu_used_sec: int
    compute_time_seconds: int
    active_time_seconds: int
    written_data_bytes: int
    data_transfer_bytes: int
    created_at: str
    updated_at: str
    # kept from the creation request and answered back (see `documented`)
    expires_at: str | None = None
    init_source: str | None = None
    parent_lsn: str | None = None
    parent_timestamp: str | None = None
    ttl_interval_seconds: int | None = None
    last_reset_at: str | None = None
    recovery: dict[str, str] | None = None  # a deleted branch: until when it may be recovered
    # set by a restore (sim.engine.restore)
    restored_from: str | None = None
    restored_as: str | None = None
    restore_status: str | None = None


class ProjectListItemOut(Out):
    id: str
    platform_id: str
    region_id: str
    name: str
    provisioner: str
    pg_version: int
    proxy_host: str
    branch_logical_size_limit: int
    branch_logical_size_limit_bytes: int
    store_passwords: bool
    active_time: int
    cpu_used_sec: int
    creation_source: str
    history_retention_seconds: int
    created_at: str
    updated_at: str
    owner_id: str
    org_id: str | None = None
    compute_last_active_at: str | None = None
    settings: dict[str, Any]
    default_endpoint_settings: dict[str, Any] | None = None


class ProjectOut(ProjectListItemOut):
    data_storage_bytes_hour: int
    data_transfer_bytes: int
    written_data_bytes: int
    compute_time_seconds: int
    active_time_seconds: int
    consumption_period_start: str
    consumption_period_end: str


class ConnectionParameters(Out):
    database: str
    password: str
    role: str
    host: str
    pooler_host: str


class ConnectionUri(Out):
    connection_uri: str
    connection_parameters: ConnectionParameters


class RoleOut(Out):
    branch_id: str
    name: str
    password: str | None = None  # only in the answers that create or reset it
    protected: bool
    created_at: str
    updated_at: str


class DatabaseOut(Out):
    id: int
    branch_id: str
    name: str
    owner_name: str
    created_at: str
    updated_at: str


class Pagination(Out):
    cursor: str | None = None


class EndpointResponse(Out):
    endpoint: EndpointOut


class EndpointOperations(Out):
    endpoint: EndpointOut
    operations: list[OperationOut]


class EndpointsResponse(Out):
    endpoints: list[EndpointOut]


class OperationResponse(Out):
    operation: OperationOut


class OperationsPage(Out):
    operations: list[OperationOut]
    pagination: Pagination


class ProjectResponse(Out):
    project: ProjectOut


class ProjectOperations(Out):
    project: ProjectOut
    operations: list[OperationOut]


class ProjectCreated(Out):
    project: ProjectOut
    connection_uris: list[ConnectionUri]
    roles: list[RoleOut]
    databases: list[DatabaseOut]
    operations: list[OperationOut]
    branch: BranchOut
    endpoints: list[EndpointOut]


class ProjectsResponse(Out):
    projects: list[ProjectListItemOut]
    pagination: Pagination
    # by project id: the integrations installed (the simulator has none, so empty lists)
    applications: dict[str, list[str]]
    integrations: dict[str, list[str]]


class AnnotationOut(Out):
    object: dict[str, str]
    value: dict[str, str]
    created_at: str
    updated_at: str


class BranchResponse(Out):
    branch: BranchOut
    annotation: AnnotationOut


class BranchOperations(Out):
    branch: BranchOut
    operations: list[OperationOut]


class BranchCreated(Out):
    branch: BranchOut
    endpoints: list[EndpointOut]
    operations: list[OperationOut]
    roles: list[RoleOut]
    databases: list[DatabaseOut]
    connection_uris: list[ConnectionUri] | None = None


class BranchesResponse(Out):
    branches: list[BranchOut]
    annotations: dict[str, AnnotationOut]  # by branch id


# ---- /_sim responses -------------------------------------------------------------------------


class ClockOut(Out):
    now: str
    seconds: float
    start: str
    mode: str
    speed: float


class UnappliedRowOut(Out):
    seq: int
    kind: str
    method: str | None
    path: str | None
    seconds: float
    reason: str
    applied_through: int
    not_applied: int


class StateOut(Out):
    file: str | None
    held: UnappliedRowOut | None


class ConnectionsOut(Out):
    outcomes: dict[str, int]
    endpoint: EndpointOut
    operations: list[OperationOut]


class OutageOut(Out):
    start: str
    end: str


class FaultsOut(Out):
    operation_failure_rate: float
    extra_latency_ms: float
    outages: list[OutageOut]


class ResetOut(Out):
    clock: ClockOut
    projects: int
