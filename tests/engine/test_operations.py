"""Operations: failures and retries, locks, terminal statuses, pagination (the specification #22-#23)."""

from __future__ import annotations

import pytest

from sim.rules.states import TERMINAL_STATUSES
from tests.engine.support import COLD, OP, control_plane, refused, running_compute


class StatusLog:
    """Every (status, failures_count, updated_at) each operation showed, polled often."""

    def __init__(self, cp):
        self.cp = cp
        self.seen: dict[str, list[tuple]] = {}

    def poll(self):
        for op in self.cp.operations.values():
            snap = (op.status, op.failures_count, op.updated_at, op.error, op.retry_at)
            history = self.seen.setdefault(op.id, [])
            if not history or history[-1] != snap:
                history.append(snap)

    def run(self, seconds, step=0.25):
        end = self.cp.now + seconds
        while self.cp.now < end:
            self.cp.run_until(min(end, self.cp.now + step))
            self.poll()


def test_failed_attempts_are_retried_until_the_operation_finishes():
    cp = control_plane(seed=3, operation_failure_rate=0.3, retry_backoff_s=5.0)
    log = StatusLog(cp)
    project = cp.create_project("p", default_endpoint={"suspend_timeout_seconds": 60}).project
    for _ in range(5):
        cp.create_compute(project.id, project.default_branch_id, "read_only",
                          suspend_timeout_seconds=60)
    log.poll()
    log.run(600)
    failed = [(op_id, snap) for op_id, h in log.seen.items() for snap in h if snap[0] == "failed"]
    assert failed, "at a 30% failure rate some attempt must fail"
    for _, (_, failures, updated_at, error, retry_at) in failed:
        assert failures >= 1 and error and "failed" in error
        assert retry_at == pytest.approx(updated_at + 5.0)
    for op in cp.operations.values():
        assert op.status == "finished", op
    retried = {op_id for op_id, _ in failed}
    assert all(cp.operations[i].failures_count >= 1 for i in retried)
    assert all(cp.operations[i].retry_at is None for i in retried)


def test_terminal_statuses_never_change():
    cp = control_plane(seed=5, operation_failure_rate=0.2, check_availability_every_s=120.0)
    log = StatusLog(cp)
    project = cp.create_project("p", default_endpoint={"suspend_timeout_seconds": 60}).project
    compute = cp.list_computes(project.id)[0]
    log.run(30)
    for k in range(20):
        cp.connect(project.id, compute.id, 5, count=3)
        log.run(50 + 17 * k)
    for op_id, history in log.seen.items():
        statuses = [snap[0] for snap in history]
        first_terminal = next((i for i, s in enumerate(statuses) if s in TERMINAL_STATUSES), None)
        if first_terminal is not None:
            assert history[first_terminal:] == history[first_terminal:first_terminal + 1], (
                f"{op_id} changed after {statuses[first_terminal]}: {history}")
    assert len(log.seen) > 20


def test_an_api_mutation_while_an_operation_runs_is_refused_with_423():
    cp = control_plane()
    created = cp.create_project("p")
    project, c = created.project, created.computes[0]
    cp.advance(OP + 0.5)  # start_compute running
    for call, args, kwargs in [
        (cp.update_compute, (project.id, c.id), {"suspend_timeout_seconds": 60}),
        (cp.restart_compute, (project.id, c.id), {}),
        (cp.delete_compute, (project.id, c.id), {}),
        (cp.start_compute, (project.id, c.id), {}),
        (cp.suspend_compute, (project.id, c.id), {}),
    ]:
        err = refused(cp, 423, call, *args, **kwargs)
        assert err.code == "LOCKED"
    cp.advance(COLD)
    cp.update_compute(project.id, c.id, suspend_timeout_seconds=60)  # free again


def test_500_operations_of_one_instant_page_out_exactly_once_newest_first():
    cp = control_plane()
    created = cp.create_project("p")
    project = created.project
    for _ in range(498):
        cp.create_compute(project.id, created.branch.id, "read_only")
    assert cp.now == 0 and len(project.operations) == 500
    seen, cursor, pages = [], None, 0
    while True:
        page, cursor = cp.list_operations(project.id, limit=7, cursor=cursor)
        if not page:
            break
        pages += 1
        assert len(page) <= 7
        seen += page
    assert pages == 72  # 71 full pages and one of 3
    assert len(seen) == 500 and len({o.id for o in seen}) == 500
    assert {o.id for o in seen} == {o.id for o in project.operations}
    stamps = [o.created_us for o in seen]
    assert stamps == sorted(stamps, reverse=True) and len(set(stamps)) == 500
    assert seen[0] is project.operations[-1]


def test_pagination_after_time_passes_and_new_operations_arrive():
    cp = control_plane()
    project, c = running_compute(cp, suspend_timeout_seconds=60)
    first, cursor = cp.list_operations(project.id, limit=1)
    cp.advance(200)  # a suspend_compute is added meanwhile (newer than the cursor)
    rest, _ = cp.list_operations(project.id, limit=100, cursor=cursor)
    assert [o.id for o in first + rest] == [o.id for o in reversed(project.operations[:2])]


@pytest.mark.parametrize("limit", [0, 1001, -1, True, 2.5])
def test_a_bad_limit_is_refused_with_400(limit):
    cp = control_plane()
    project, _ = running_compute(cp)
    refused(cp, 400, cp.list_operations, project.id, limit=limit)


def test_skipping_an_operation_queued_behind_a_running_one_leaves_the_running_one_alone():
    cp = control_plane()
    project = cp.create_project("p", with_compute=False).project  # create_timeline runs 0..OP
    cp.update_project(project.id, history_retention_seconds=3600)
    timeline, queued = project.operations
    assert (timeline.status, queued.status) == ("running", "scheduling")
    assert cp.executor.skip(queued)
    assert (timeline.status, queued.status) == ("running", "skipped")
    assert queued.finished_at == cp.now
    cp.advance(OP + 0.5)
    assert timeline.status == "finished" and not cp.executor.lane_busy(cp.project_lane(project))
