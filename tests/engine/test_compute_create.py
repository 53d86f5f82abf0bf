"""Creating, placing and deleting computes (the specification: Compute current_state, endpoints #17-#20)."""

from __future__ import annotations

from sim.engine.records import Outcome
from tests.engine.support import COLD, OP, actions, control_plane, ops_of, refused, running_compute


def test_compute_created_with_its_project_starts_after_create_timeline():
    cp = control_plane()
    created = cp.create_project("p")
    c = created.computes[0]
    assert c.current_state == "init" and c.pending_state == "active"
    timeline, start = created.operations
    assert (timeline.action, timeline.status) == ("create_timeline", "running")
    # the create-compute rule: its start_compute is returned running, even while it
    # still waits for the timeline it will run on
    assert (start.action, start.status, start.endpoint_id) == ("start_compute", "running", c.id)
    cp.advance(OP + 0.5)
    assert timeline.status == "finished" and start.status == "running"
    assert c.current_state == "init" and c.pending_state == "active"
    cp.advance(COLD - 1.0)  # the cold start counts from the end of the timeline
    assert c.current_state == "init" and start.status == "running"
    cp.advance(1.0)
    assert c.current_state == "active" and c.pending_state is None
    assert start.status == "finished" and start.finished_at == OP + COLD


def test_compute_created_on_a_ready_branch_returns_a_running_start_compute():
    cp = control_plane()
    project = cp.create_project("p", with_compute=False).project
    branch = cp.create_branch(project.id, "dev").branch
    cp.advance(2 * OP + 0.5)  # create_timeline, then create_branch (one storage lane)
    c, ops = cp.create_compute(project.id, branch.id, "read_write")
    assert c.current_state == "init" and c.pending_state == "active"
    assert [(o.action, o.status) for o in ops] == [("start_compute", "running")]
    cp.advance(COLD + 0.5)
    assert c.current_state == "active" and ops[0].status == "finished"


def test_computes_created_with_their_branch_return_running_start_computes():
    cp = control_plane()
    project, _ = running_compute(cp)
    created = cp.create_branch(project.id, "dev", endpoints=[{"type": "read_write"},
                                                            {"type": "read_only"}])
    assert [(o.action, o.status) for o in created.operations] == [
        ("create_branch", "running"), ("start_compute", "running"), ("start_compute", "running")]
    cp.advance(OP + COLD - 0.5)
    assert {c.current_state for c in created.computes} == {"init"}
    cp.advance(1.0)
    assert {c.current_state for c in created.computes} == {"active"}
    assert {o.finished_at for o in created.operations[1:]} == {cp.now - 0.5}


def test_a_second_read_write_on_a_branch_is_refused_and_changes_nothing():
    cp = control_plane()
    project, primary = running_compute(cp)
    err = refused(cp, 409, cp.create_compute, project.id, primary.branch_id, "read_write")
    assert err.code == "CONFLICT"
    assert [x.id for x in cp.list_computes(project.id)] == [primary.id]


def test_several_read_only_computes_may_share_a_branch():
    cp = control_plane()
    project, primary = running_compute(cp)
    replicas = [cp.create_compute(project.id, primary.branch_id, "read_only")[0] for _ in range(3)]
    assert {r.type for r in replicas} == {"read_only"}
    assert len({r.id for r in replicas}) == 3
    assert len(cp.list_computes(project.id, primary.branch_id)) == 4


def test_moving_a_read_write_to_a_branch_that_has_one_is_refused():
    cp = control_plane()
    project, primary = running_compute(cp)
    dev = cp.create_branch(project.id, "dev", endpoints=[{"type": "read_write"}])
    cp.advance(OP + COLD + 0.5)
    other = dev.computes[0]
    refused(cp, 409, cp.update_compute, project.id, other.id, branch_id=primary.branch_id)
    # a replica may move there, and the read_write may move to a branch without one
    replica, _ = cp.create_compute(project.id, dev.branch.id, "read_only")
    cp.advance(COLD + 0.5)
    cp.update_compute(project.id, replica.id, branch_id=primary.branch_id)
    assert replica.branch_id == primary.branch_id
    empty = cp.create_branch(project.id, "empty").branch
    cp.advance(OP + 0.5)
    cp.update_compute(project.id, other.id, branch_id=empty.id)
    assert other.branch_id == empty.id and other.id in empty.computes


def test_moving_a_read_write_to_a_branch_with_only_a_replica_is_refused_and_changes_nothing():
    cp = control_plane()
    project, primary = running_compute(cp)
    dev = cp.create_branch(project.id, "dev", endpoints=[{"type": "read_only"}])
    cp.advance(OP + COLD + 0.5)
    replica = dev.computes[0]
    err = refused(cp, 409, cp.update_compute, project.id, primary.id, branch_id=dev.branch.id)
    assert err.field == "endpoint.branch_id" and replica.id in err.message
    assert primary.branch_id != dev.branch.id and dev.branch.computes == [replica.id]
    assert primary.current_state == "active" and not ops_of(cp, primary, "apply_config")


def test_deleting_a_compute_drops_its_connections_and_a_new_one_gets_new_details():
    cp = control_plane()
    project, c = running_compute(cp)
    assert cp.connect(project.id, c.id, 600, count=4) == [Outcome.OK] * 4
    deleted, ops = cp.delete_compute(project.id, c.id)
    assert deleted is c and c.deleted_at == cp.now
    assert c.stats.dropped == 4 and c.runtime.open_connections(cp.now) == 0
    assert actions(ops) == ["suspend_compute"]
    refused(cp, 404, cp.get_compute, project.id, c.id)
    cp.advance(OP + 0.5)
    again, _ = cp.create_compute(project.id, c.branch_id, "read_write")
    assert again.id != c.id and again.host != c.host
    cp.advance(COLD + 0.5)
    assert again.current_state == "active"
    assert ops_of(cp, again, "start_compute")[0].status == "finished"
