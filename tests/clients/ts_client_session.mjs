// The official TypeScript client (@neondatabase/api-client) against a manual-clock `sim serve`.
//
// Calls every client method whose route the simulator serves, checks
// the typed fields a program would read, and prints one JSON object:
// {"results": {method: {"ok": true} | {"ok": false, "error": "..."}}}.
// Environment: SIM_NPM_MODULES (node_modules of the pinned install), SIM_BASE, SIM_KEY.

import { createRequire } from "node:module";

const require = createRequire(`${process.env.SIM_NPM_MODULES}/`);
const { createApiClient } = require("@neondatabase/api-client");

const base = process.env.SIM_BASE;
const key = process.env.SIM_KEY;
const api = createApiClient({ apiKey: key, baseURL: `${base}/api/v2` });
const results = {};

function expect(condition, message) {
  if (!condition) throw new Error(message);
}

async function call(method, ...args) {
  const check = typeof args.at(-1) === "function" ? args.pop() : () => {};
  try {
    const { data } = await api[method](...args);
    check(data);
    results[method] = { ok: true };
    return data;
  } catch (err) {
    const answer = err.response ? `${err.response.status} ${JSON.stringify(err.response.data)}` : "";
    results[method] = { ok: false, error: `${err.message} ${answer}`.trim() };
    return null;
  }
}

async function sim(path, body) {
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

// operations end while the clock moves: a minute is more than any of them takes
const settle = () => sim("/_sim/advance", { seconds: 60 });

const me = await call("getCurrentUserInfo", (d) => expect(d.id && d.plan, "no id or plan"));
await call("getActiveRegions", {}, (d) =>
  expect(d.regions.filter((r) => r.default).length === 1, "not one default region"));

// ---- projects
const made = await call("createProject", { project: { name: "ts-shop" } }, (d) => {
  expect(d.roles.length === 1 && d.databases.length === 1, "roles or databases missing");
  expect(d.connection_uris[0].connection_parameters.password === d.roles[0].password,
    "the URI's password is not the role's");
});
const p = made.project.id;
const main = made.branch.id;
const owner = made.roles[0];
await call("listProjects", {}, (d) => expect(d.projects.some((x) => x.id === p), "not listed"));
await call("listSharedProjects", {}, (d) => expect(d.projects.length === 0, "shared projects"));
await call("getProject", p, (d) => expect(d.project.owner_id === me.id, "owner is not me"));
await call("updateProject", p, { project: { name: "ts-store" } }, (d) =>
  expect(d.project.name === "ts-store", "not renamed"));
await settle();
const page = await call("listProjectOperations", { projectId: p, limit: 2 }, (d) =>
  expect(d.operations.length === 2 && d.pagination.cursor, "no page or cursor"));
await call("getProjectOperation", p, page.operations[0].id, (d) =>
  expect(d.operation.status === "finished", "not finished"));
await call("getConnectionUri", { projectId: p, database_name: "neondb",
  role_name: "neondb_owner", pooled: true }, (d) =>
  expect(d.uri.includes("-pooler.") && d.uri.includes(owner.password), "not the pooled URI"));

// ---- managed auth (the integration itself is created with the simulator's own route)
await sim("/api/v2/projects/auth/create", { project_id: p, branch_id: main, auth_provider: "stack" });
await call("createNeonAuthProviderSdkKeys", { project_id: p, auth_provider: "stack" }, (d) =>
  expect(d.pub_client_key && d.secret_server_key, "no keys"));
await call("transferNeonAuthProviderProject", { project_id: p, auth_provider: "stack" }, (d) =>
  expect(d.url.startsWith("http"), "no url"));

// ---- branches
await call("listProjectBranches", { projectId: p }, (d) =>
  expect(d.branches.length === 1 && typeof d.annotations === "object", "no annotations map"));
const dev = await call("createProjectBranch", p, {
  branch: { name: "dev" }, endpoints: [{ type: "read_write" }], annotation_value: { ci: "yes" },
}, (d) => {
  expect(d.roles[0].name === "neondb_owner" && d.databases[0].name === "neondb", "no copies");
  expect(d.connection_uris[0].connection_uri.includes(d.endpoints[0].host), "no URI");
});
const devId = dev.branch.id;
await call("getProjectBranch", p, devId, (d) => expect(d.annotation.value.ci === "yes", "no annotation"));
await call("updateProjectBranch", p, devId, { branch: { name: "feature" } }, (d) =>
  expect(d.branch.name === "feature", "not renamed"));
await settle();
await call("listProjectBranchEndpoints", p, devId, (d) =>
  expect(d.endpoints.length === 1, "not one compute"));

// ---- computes
const replica = await call("createProjectEndpoint", p, { endpoint: { branch_id: main, type: "read_only" } },
  (d) => expect(d.endpoint.type === "read_only", "not a replica"));
const ep = replica.endpoint.id;
await call("listProjectEndpoints", p, (d) => expect(d.endpoints.length === 3, "not 3 computes"));
await settle();
await call("getProjectEndpoint", p, ep, (d) => expect(d.endpoint.current_state === "active", "not active"));
await call("updateProjectEndpoint", p, ep, { endpoint: { suspend_timeout_seconds: 600 } }, (d) =>
  expect(d.endpoint.suspend_timeout_seconds === 600, "not updated"));
await settle();
await call("suspendProjectEndpoint", p, ep, (d) => expect(d.operations.length === 1, "no suspension"));
await settle();
await call("startProjectEndpoint", p, ep, (d) => expect(d.operations.length >= 1, "no start"));
await settle();
await call("restartProjectEndpoint", p, ep, (d) => expect(d.operations.length === 2, "no restart"));
await settle();

// ---- roles and databases
await call("listProjectBranchRoles", p, main, (d) => expect(d.roles.length === 1, "not one role"));
const alice = await call("createProjectBranchRole", p, main, { role: { name: "alice" } }, (d) =>
  expect(d.role.password && d.operations.every((o) => o.action === "apply_config"), "no password"));
await settle();
await call("getProjectBranchRole", p, main, "alice", (d) => expect(d.role.name === "alice", "wrong role"));
await call("getProjectBranchRolePassword", p, main, "alice", (d) =>
  expect(d.password === alice.role.password, "another password"));
await call("resetProjectBranchRolePassword", p, main, "alice", (d) =>
  expect(d.role.password !== alice.role.password, "same password"));
await settle();
await call("listProjectBranchDatabases", p, main, (d) => expect(d.databases.length === 1, "not one database"));
await call("createProjectBranchDatabase", p, main, { database: { name: "shop", owner_name: "alice" } },
  (d) => expect(d.database.owner_name === "alice", "wrong owner"));
await settle();
await call("getProjectBranchDatabase", p, main, "shop", (d) => expect(d.database.name === "shop", "wrong database"));
await call("updateProjectBranchDatabase", p, main, "shop", { database: { name: "store" } }, (d) =>
  expect(d.database.name === "store", "not renamed"));
await settle();
await call("deleteProjectBranchDatabase", p, main, "store", (d) => expect(d.database.name === "store", "wrong one"));
await settle();
await call("deleteProjectBranchRole", p, main, "alice", (d) => expect(d.role.name === "alice", "wrong one"));
await settle();

// ---- default branch, deletions
await call("setDefaultProjectBranch", p, devId, (d) => expect(d.branch.default === true, "not default"));
await call("deleteProjectEndpoint", p, ep, (d) => expect(d.endpoint.id === ep, "wrong compute"));
await settle();
const scratch = await api.createProjectBranch(p, { branch: { name: "scratch" } });
await settle();
await call("deleteProjectBranch", { projectId: p, branchId: scratch.data.branch.id }, (d) =>
  expect(d.branch.name === "scratch", "wrong branch"));
// ---- the organization, its members and keys, the account's keys, sharing the project
const orgs = await call("getCurrentUserOrganizations", (d) => expect(d.organizations.length === 1, "not one organization"));
const org = orgs.organizations[0].id;
await call("getOrganization", org, (d) => expect(d.id === org, "wrong organization"));
const members = await call("getOrganizationMembers", { orgId: org, sort_by: "email" }, (d) =>
  expect(d.members[0].member.user_id === me.id && d.members[0].member.role === "admin", "not the admin"));
await call("getOrganizationMember", org, members.members[0].member.id, (d) => expect(d.user_id === me.id, "wrong member"));
await call("getAuthDetails", (d) => expect(d.account_id === me.id && d.auth_method === "api_key_user", "not the user's key"));
const orgKey = await call("createOrgApiKey", org, { key_name: "ts-one", project_id: p }, (d) =>
  expect(d.key && d.project_id === p, "no key for the project"));
await call("listOrgApiKeys", org, (d) => expect(d.some((k) => k.id === orgKey.id && k.project_id === p), "not listed"));
await call("revokeOrgApiKey", org, orgKey.id, (d) => expect(d.revoked === true, "not revoked"));
const accountKey = await call("createApiKey", { key_name: "ts-key" }, (d) => expect(d.key && d.id, "no key"));
await call("listApiKeys", (d) => expect(d.some((k) => k.id === accountKey.id), "not listed"));
await call("revokeApiKey", accountKey.id, (d) => expect(d.revoked === true, "not revoked"));
await call("createOrganizationInvitations", org, { invitations: [{ email: "ann@example.com", role: "member" }] },
  (d) => expect(d.invitations[0].email === "ann@example.com", "not invited"));
await call("getOrganizationInvitations", org, (d) => expect(d.invitations.length === 1, "not one invitation"));
await call("setOrganizationSpendingLimit", org, { spending_limit_cents: 5000 }, (d) =>
  expect(d.spending_limit_cents === 5000, "limit not set"));
await call("getOrganizationSpendingLimit", org, (d) => expect(d.spending_limit_cents === 5000, "limit not kept"));
await call("deleteOrganizationSpendingLimit", org);
await call("listOrganizationVpcEndpointsAllRegions", org, (d) => expect(d.endpoints.length === 0, "endpoints"));
await call("listOrganizationVpcEndpoints", org, "aws-us-east-2", (d) => expect(d.endpoints.length === 0, "endpoints"));
const grant = await call("grantPermissionToProject", p, { email: "bob@example.com" }, (d) =>
  expect(d.granted_to_email === "bob@example.com", "not granted"));
await call("listProjectPermissions", p, (d) => expect(d.project_permissions.length === 1, "not one grant"));
await call("revokePermissionFromProject", p, grant.id, (d) => expect(d.revoked_at, "not revoked"));

// ---- the lifecycle over time: consumption, branch count, snapshots, restore, recovery
const clock = await settle();
const iso = (ms) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
const span = { from: iso(Date.parse(clock.now) - 6 * 3600e3), to: iso(Date.parse(clock.now)), granularity: "hourly" };
await call("getConsumptionHistoryPerProject", span, (d) =>
  expect(d.projects.some((x) => x.project_id === p), "project not billed"));
await call("getConsumptionHistoryPerProjectV2", { ...span, org_id: org, metrics: "compute_unit_seconds" },
  (d) => expect(d.projects.some((x) => x.project_id === p), "project not billed"));
await call("getConsumptionHistoryPerBranchV2", { ...span, org_id: org, project_ids: p, metrics: "compute_unit_seconds" },
  (d) => expect(Array.isArray(d.branches), "no branches"));
await call("countProjectBranches", { projectId: p }, (d) => expect(d.count >= 2, "fewer than 2 branches"));
const snap = await call("createSnapshot", { projectId: p, branchId: main, name: "ts-snap" }, (d) =>
  expect(d.snapshot.name === "ts-snap", "wrong snapshot"));
await settle();
await call("listSnapshots", p, (d) => expect(d.snapshots.some((x) => x.id === snap.snapshot.id), "not listed"));
await call("updateSnapshot", p, snap.snapshot.id, { snapshot: { name: "ts-snap-2" } }, (d) =>
  expect(d.snapshot.name === "ts-snap-2", "not renamed"));
const restored = await call("restoreSnapshot", { projectId: p, snapshotId: snap.snapshot.id }, { name: "ts-restored" },
  (d) => expect(d.branch.name === "ts-restored", "wrong branch"));
await settle();
await call("finalizeRestoreBranch", p, restored.branch.id, {}, (d) => expect(Array.isArray(d.operations), "no operations"));
await settle();
await call("setSnapshotSchedule", p, main, { schedule: [{ frequency: "daily", hour: 6 }] });
await call("getSnapshotSchedule", p, main, (d) =>
  expect(d.schedule.length === 1 && d.schedule[0].frequency === "daily", "schedule not kept"));
await call("deleteSnapshot", p, snap.snapshot.id);
await call("listSnapshots", p, (d) => expect(!d.snapshots.some((x) => x.id === snap.snapshot.id), "not deleted"));
await call("restoreProjectBranch", p, devId, { source_branch_id: main, preserve_under_name: "ts-before" },
  (d) => expect(d.branch.id === devId, "wrong branch"));
await settle();
const gone = await api.createProjectBranch(p, { branch: { name: "gone" } });
await settle();
await api.deleteProjectBranch({ projectId: p, branchId: gone.data.branch.id });
await settle();
await call("recoverProjectBranch", p, gone.data.branch.id, (d) => expect(d.branch.name === "gone", "not recovered"));
await settle();

await call("deleteProject", p, (d) => expect(d.project.id === p, "wrong project"));
await settle();
await call("recoverProject", p, (d) => expect(d.project.id === p, "not recovered"));

process.stdout.write(JSON.stringify({ results }));
