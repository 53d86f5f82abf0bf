"""The console page's HTML, CSS and script (no build step, no external assets)."""

PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sim console</title>
<style>
  :root {
    --bg: #f6f7f9; --card: #ffffff; --ink: #1c2330; --muted: #6b7385; --line: #e4e7ec;
    --green: #1a7f4b; --green-bg: #e3f5eb; --blue: #1f5fbf; --blue-bg: #e5eefc;
    --amber: #94610a; --amber-bg: #fcf1dc; --red: #b42318; --red-bg: #fde8e6;
    --grey: #4b5565; --grey-bg: #eef0f3; --accent: #0f766e;
  }
  * { box-sizing: border-box; }
  body { margin: 0; background: var(--bg); color: var(--ink);
         font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
  header { background: #111827; color: #f9fafb; padding: 14px 28px; display: flex;
           align-items: center; gap: 24px; flex-wrap: wrap; }
  header h1 { font-size: 17px; margin: 0; font-weight: 600; letter-spacing: .2px; }
  header h1 span { color: #5eead4; }
  .clock { font-variant-numeric: tabular-nums; color: #d1d5db; }
  .clock b { color: #fff; font-weight: 600; }
  .mode { font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #374151;
          color: #e5e7eb; }
  .spacer { flex: 1; }
  button { font: inherit; border: 1px solid #4b5563; background: #1f2937; color: #f3f4f6;
           padding: 4px 11px; border-radius: 6px; cursor: pointer; }
  button:hover { background: #374151; }
  main { padding: 22px 28px 40px; max-width: 1280px; margin: 0 auto; }
  .card { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
          margin-bottom: 22px; box-shadow: 0 1px 2px rgba(16,24,40,.04); }
  .card > .head { padding: 14px 18px; border-bottom: 1px solid var(--line); display: flex;
                  align-items: baseline; gap: 12px; flex-wrap: wrap; }
  .head h2 { margin: 0; font-size: 16px; }
  .head .sub { color: var(--muted); font-size: 12.5px; }
  h3 { font-size: 12px; text-transform: uppercase; letter-spacing: .6px; color: var(--muted);
       margin: 14px 18px 6px; font-weight: 600; }
  table { width: 100%; border-collapse: collapse; table-layout: fixed; }
  th:nth-child(1) { width: 22%; } th:nth-child(2) { width: 16%; }
  th:nth-child(3) { width: 30%; } th:nth-child(4), th:nth-child(5) { width: 16%; }
  td { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  th, td { text-align: left; padding: 8px 18px; border-top: 1px solid var(--line);
           vertical-align: middle; }
  th { font-size: 12px; color: var(--muted); font-weight: 600; background: #fafbfc; }
  td.mono, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
                   font-size: 12.5px; }
  .muted { color: var(--muted); }
  .pill { display: inline-flex; align-items: center; gap: 6px; padding: 2px 10px;
          border-radius: 999px; font-size: 12.5px; font-weight: 600; white-space: nowrap; }
  .pill::before { content: ""; width: 7px; height: 7px; border-radius: 50%;
                  background: currentColor; }
  .finished, .active { color: var(--green); background: var(--green-bg); }
  .running, .starting { color: var(--blue); background: var(--blue-bg); }
  .scheduling, .suspending, .cancelling { color: var(--amber); background: var(--amber-bg); }
  .failed { color: var(--red); background: var(--red-bg); }
  .idle, .cancelled, .skipped { color: var(--grey); background: var(--grey-bg); }
  .role { font-weight: 600; }
  .role small { display: block; font-weight: 400; color: var(--muted); font-size: 12px; }
  .banner { padding: 10px 16px; border-radius: 8px; margin-bottom: 18px; }
  .banner.err { background: var(--red-bg); color: var(--red); }
  .banner.warn { background: var(--amber-bg); color: var(--amber); }
  form.key { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
             padding: 22px; max-width: 560px; }
  form.key input { width: 100%; padding: 8px 10px; font: inherit; border: 1px solid #cfd4dc;
                   border-radius: 6px; margin: 10px 0; }
  form.key button { background: var(--accent); border-color: var(--accent); }
  .empty { padding: 12px 18px; color: var(--muted); }
</style>
</head>
<body>
<header>
  <h1><span>sim</span> console</h1>
  <div class="clock" id="clock">Simulated time: …</div>
  <div class="mode" id="mode" hidden></div>
  <div class="spacer"></div>
  <div id="advance" hidden>
    <button data-s="60">+1 min</button>
    <button data-s="360">+6 min</button>
    <button data-s="3600">+1 h</button>
  </div>
  <button id="forget" title="forget the API key kept in this browser">Change key</button>
</header>
<main id="main"></main>
<script>
"use strict";
const KEY = "sim-api-key";
const main = document.getElementById("main");

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "cls") el.className = v; else el.setAttribute(k, v);
  }
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return el;
}

function takeKeyFromAddress() {
  const m = location.hash.match(/key=([^&]+)/);
  if (m) {
    localStorage.setItem(KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname);
  }
}

function askForKey(message) {
  main.replaceChildren();
  const input = h("input", {type: "password", placeholder: "API key", autocomplete: "off"});
  const form = h("form", {cls: "key"},
    h("h2", {}, "API key"),
    message ? h("p", {cls: "muted"}, message) :
      h("p", {cls: "muted"}, "The console shows the projects your key reaches. ",
        h("code", {}, "sim serve"), " printed a key at startup."),
    input, h("button", {type: "submit"}, "Show my projects"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    localStorage.setItem(KEY, input.value.trim());
    refresh();
  });
  main.append(form);
}

async function call(method, path, body) {
  const key = localStorage.getItem(KEY);
  if (!key) return {status: 401, body: {message: ""}};
  const r = await fetch(path, {method, headers: {
    authorization: "Bearer " + key, "content-type": "application/json"},
    body: body ? JSON.stringify(body) : undefined});
  return {status: r.status, body: await r.json()};
}

const slug = (s) => s.toLowerCase().replace(/[^a-z]/g, "");
const pill = (text, cls) => h("span", {cls: "pill " + cls}, text);

function table(headers, rows) {
  return h("table", {}, h("thead", {}, h("tr", {}, ...headers.map((t) => h("th", {}, t)))),
           h("tbody", {}, ...rows));
}

function computeRows(p) {
  return p.computes.map((c) => h("tr", {"data-endpoint": c.id},
    h("td", {cls: "role"}, c.role, h("small", {}, "branch " + c.branch)),
    h("td", {}, pill(c.status, slug(c.status))),
    h("td", {cls: "mono"}, c.id),
    h("td", {}, c.size),
    h("td", {title: c.last_active.at}, c.last_active.ago)));
}

function operationRows(p) {
  return p.operations.map((o) => h("tr", {title: o.error || o.id},
    h("td", {}, o.action),
    h("td", {}, pill(o.status, o.status_key)),
    h("td", {cls: "mono"}, o.endpoint_id || "—"),
    h("td", {title: o.created.at}, o.created.ago),
    h("td", {cls: "muted"}, o.duration)));
}

function render(data) {
  const c = data.clock;
  document.getElementById("clock").replaceChildren("Simulated time: ",
    h("b", {}, c.now.replace("T", " ").replace(/\.\d+Z$/, " UTC")),
    h("span", {cls: "muted"}, "  ·  " + (c.seconds / 60).toFixed(1) + " min since start"));
  const mode = document.getElementById("mode");
  mode.hidden = false;
  mode.textContent = c.mode === "manual" ? "manual clock" : "realtime ×" + c.speed;
  document.getElementById("advance").hidden = c.mode !== "manual";
  const parts = [];
  if (data.outage) parts.push(h("div", {cls: "banner warn"},
    "Injected outage: API calls answer 503 until it ends."));
  if (!data.projects.length) parts.push(h("div", {cls: "card"},
    h("div", {cls: "empty"}, "No projects yet. Create one with POST /api/v2/projects.")));
  for (const p of data.projects) {
    parts.push(h("section", {cls: "card", "data-project": p.id},
      h("div", {cls: "head"}, h("h2", {}, p.name),
        h("span", {cls: "sub mono"}, p.id), h("span", {cls: "sub"}, p.region_id)),
      h("h3", {}, "Computes"),
      p.computes.length
        ? table(["Compute", "Status", "Endpoint ID", "Size", "Last active"], computeRows(p))
        : h("div", {cls: "empty"}, "No computes."),
      h("h3", {}, "Operations (" + Math.min(p.operations.length, p.operations_total) +
        " newest of " + p.operations_total + ")"),
      table(["Action", "Status", "Compute", "Created", "Duration"], operationRows(p))));
  }
  main.replaceChildren(...parts);
}

async function refresh() {
  try {
    const r = await call("GET", "/_sim/console");
    if (r.status === 401) return askForKey(localStorage.getItem(KEY) ?
      "That key was refused: " + r.body.message : "");
    if (r.status !== 200) throw new Error(r.body.message || "HTTP " + r.status);
    render(r.body);
  } catch (err) {
    main.prepend(h("div", {cls: "banner err"}, "Cannot reach the simulator: " + err.message));
  }
}

document.querySelectorAll("#advance button").forEach((b) => b.addEventListener("click",
  async () => { await call("POST", "/_sim/advance", {seconds: Number(b.dataset.s)}); refresh(); }));
document.getElementById("forget").addEventListener("click", () => {
  localStorage.removeItem(KEY); askForKey("");
});
takeKeyFromAddress();
refresh();
setInterval(() => { if (!document.querySelector("form.key")) refresh(); }, 2000);
</script>
</body>
</html>
"""
