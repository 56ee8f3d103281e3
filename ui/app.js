// app.js - the Sluice console (docs/console.md): one page, plain DOM, no
// library. Served by sluiced under /ui/ with script-src 'self'; every
// string from the API is put into the page as text (textContent through
// el()), never as markup. The token lives in sessionStorage and goes out
// only in the Authorization header; live updates come from GET /v1/events
// read with fetch() streaming (EventSource cannot send that header).
"use strict";

const S = {
  token: sessionStorage.getItem("sluice.token") || "",
  admin: false,
  tenant: null,
  page: null,
  lastEventId: null,
  stream: null,       // the AbortController of the event stream
  listeners: [],      // (event) => void, the current page's
  cleanups: [],       // () => void, run when the page is left (its own streams)
  jobsQuery: { state: "pending,running", tenant: "", limit: 100, after: 0, stack: [], sort: "id", desc: false, name: "" },
  heatCell: null,     // the heat map's cell in pixels; null: by the node count
};

// ---- DOM helpers: text only ----

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else if (k === "dataset") Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    e.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
function $(id) { return document.getElementById(id); }

function fmtTime(t) {
  if (t === null || t === undefined) return "";
  const d = new Date(t * 1000);
  return d.toLocaleString();
}
function fmtDur(s) {
  if (s === null || s === undefined) return "–";
  if (s > 0 && s < 0.001) return (s * 1e6).toFixed(0) + " µs";
  if (s < 0.1) return (s * 1000).toFixed(s < 0.01 ? 2 : 1) + " ms";
  if (s < 1) return (s * 1000).toFixed(0) + " ms";
  if (s < 120) return s.toFixed(1) + " s";
  if (s < 7200) return (s / 60).toFixed(1) + " min";
  return (s / 3600).toFixed(1) + " h";
}
function pct(x) { return x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%"; }

// ---- the API ----

async function api(method, path, body) {
  const opt = { method, headers: { "Authorization": "Bearer " + S.token } };
  if (body !== undefined) {
    opt.headers["Content-Type"] = "application/json";
    opt.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  let r = await fetch(path, opt);
  // One report at a time in the controller: a 503 with Retry-After is
  // asked again (a few times) rather than shown.
  for (let i = 0; i < 5 && r.status === 503 && method === "GET" && r.headers.get("Retry-After"); i++) {
    await new Promise((res) => setTimeout(res, 1000 * Number(r.headers.get("Retry-After") || 1)));
    r = await fetch(path, opt);
  }
  const ct = r.headers.get("Content-Type") || "";
  const data = ct.includes("json") ? await r.json() : await r.text();
  if (!r.ok) {
    const msg = data && data.error ? data.error.message : String(data);
    const e = new Error(msg);
    e.status = r.status;
    e.field = data && data.error ? data.error.field : null;
    throw e;
  }
  return { data, headers: r.headers };
}

async function allNodes() {
  const out = [];
  let after = "";
  for (let i = 0; i < 1000; i++) {   // 10,000 a page: 10 pages for 100,000 nodes
    const q = "/v1/nodes?limit=10000" + (after ? "&after=" + encodeURIComponent(after) : "");
    const { data } = await api("GET", q);
    out.push(...data.nodes);
    if (!data.next_after) break;
    after = data.next_after;
  }
  return out;
}

// ---- the event stream ----

function setLive(on, text) {
  const l = $("live");
  l.className = "live " + (on ? "on" : "off");
  l.textContent = text;
}

function parseFrame(text) {
  const ev = { id: null, event: "message", data: null };
  let any = false;
  for (const line of text.split("\n")) {
    if (line.startsWith(":")) continue;
    any = true;
    if (line.startsWith("id: ")) ev.id = line.slice(4);
    else if (line.startsWith("event: ")) ev.event = line.slice(7);
    else if (line.startsWith("data: ")) {
      try { ev.data = JSON.parse(line.slice(6)); } catch (e) { ev.data = line.slice(6); }
    }
  }
  return any ? ev : null;
}

async function follow() {
  if (S.stream) S.stream.abort();
  const ctl = new AbortController();
  S.stream = ctl;
  let delay = 500;
  while (!ctl.signal.aborted) {
    try {
      const headers = { "Authorization": "Bearer " + S.token, "Accept": "text/event-stream" };
      if (S.lastEventId) headers["Last-Event-ID"] = S.lastEventId;
      const r = await fetch("/v1/events", { headers, signal: ctl.signal, cache: "no-store" });
      if (!r.ok) throw new Error("events: HTTP " + r.status);
      setLive(true, "live");
      delay = 500;
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const ev = parseFrame(buf.slice(0, i));
          buf = buf.slice(i + 2);
          if (!ev) continue;
          if (ev.id) S.lastEventId = ev.id;
          if ((ev.event === "hello" || ev.event === "reset") && ev.data && S.onHello) {
            S.onHello(ev.data);
            S.onHello = null;
          }
          for (const fn of S.listeners) {
            try { fn(ev); } catch (e) { console.warn("listener", e); }
          }
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
    }
    setLive(false, "reconnecting");
    await new Promise((res) => setTimeout(res, delay));
    delay = Math.min(delay * 2, 10000);
  }
}

// Calls fn at most every ms while events arrive (a burst of 100,000
// submissions redraws a page a few times, not 100,000).
function debounce(fn, ms) {
  let t = null;
  return () => { if (!t) t = setTimeout(() => { t = null; fn(); }, ms); };
}

function onEvents(fn) { S.listeners.push(fn); }

// ---- pages ----

const pages = { overview, heatmap, jobs, job, nodes, tenants, report, submit };

function route() {
  if (!S.token) { showLogin(); return; }
  const h = location.hash.replace(/^#\/?/, "") || "overview";
  const [name, arg] = h.split("/");
  const fn = pages[name] || overview;
  S.listeners = [];
  for (const fn of S.cleanups.splice(0)) { try { fn(); } catch (e) { /* gone already */ } }
  S.page = name;
  for (const a of document.querySelectorAll("#nav a"))
    a.classList.toggle("active", a.dataset.page === (name === "job" ? "jobs" : name));
  const page = clear($("page"));
  fn(page, arg).catch((e) => page.appendChild(el("p", { class: "error" }, e.message)));
}

function showLogin() {
  $("login").hidden = false;
  $("page").hidden = true;
  $("logout").hidden = true;
  $("who").textContent = "";
  setLive(false, "offline");
}

// Logging in: a bad token gets 401 from GET /v1/tenants; the event
// stream's hello then says whose token it is (the admin's, or a tenant's).
async function login(token) {
  S.token = token;
  await api("GET", "/v1/tenants");
  const hello = new Promise((res) => { S.onHello = res; });
  follow();
  const h = await Promise.race([hello, new Promise((res) => setTimeout(() => res(null), 10000))]);
  if (!h) throw new Error("the event stream did not answer");
  S.admin = h.role === "admin";
  S.tenant = h.tenant || null;
  sessionStorage.setItem("sluice.token", token);
  $("login").hidden = true;
  $("page").hidden = false;
  $("logout").hidden = false;
  $("who").textContent = S.admin ? "admin" : "tenant " + (S.tenant || "?");
  route();
}

async function overview(page) {
  page.appendChild(el("h1", {}, "Overview"));
  const body = el("div");
  page.appendChild(body);
  // The report reads the database on a thread of its own: asked for at
  // most every 30 s, not on every event.
  let rep = null, repAt = 0;
  const report = async () => {
    if (Date.now() - repAt > 30000) {
      rep = await api("GET", "/v1/report?since=86400").catch(() => rep);
      repAt = Date.now();
    }
    return rep;
  };
  // Every node (10 pages at 10,000 nodes) at most every 10 s; the
  // figures of /metrics on each redraw.
  let nodes = [], nodesAt = 0;
  const draw = async () => {
    if (Date.now() - nodesAt > 10000) { nodes = await allNodes(); nodesAt = Date.now(); }
    const [t, rep, metrics] = await Promise.all([
      api("GET", "/v1/tenants"),
      report(),
      api("GET", "/metrics").then((r) => parseMetrics(r.data)).catch(() => new Map()),
    ]);
    const tenants = t.data.tenants;
    let cap = 0, free = 0, shared = 0, down = 0, idle = 0, unhealthy = 0;
    for (const n of nodes) {
      cap += n.gpus;
      if (n.state === "down" || !n.connected) down += n.gpus;
      for (const m of (n.free.gpu_milli || [])) { free += m / 1000; if (m > 0 && m < 1000) shared++; }
      for (let i = 0; i < n.gpus; i++) {
        const st = gpuState(n, i);
        if (st === "idle") idle++;
        else if (st === "unhealthy") unhealthy++;
      }
    }
    const alloc = cap - free;
    const mv = (k) => { const v = metrics.get(k); return v === undefined || Number.isNaN(v) ? null : v; };
    const frag = mv("sluice_gpu_fragmentation_ratio");
    const pending = tenants.reduce((a, x) => a + x.pending, 0);
    const running = tenants.reduce((a, x) => a + x.running, 0);
    const r = rep ? rep.data : null;
    clear(body);
    body.appendChild(el("div", { class: "cards" },
      card("pending jobs", pending), card("running jobs", running),
      card("GPUs allocated", alloc.toFixed(1) + " / " + cap, pct(cap ? alloc / cap : null)),
      card("shared GPUs", shared), card("idle but allocated", idle, "GPUs under " + IDLE_UTIL * 100 + "% busy"),
      card("GPUs unhealthy", unhealthy), card("GPUs down", down),
      card("fragmentation", frag === null ? "–" : pct(frag), "of free GPUs stranded"),
      card("throughput (24 h)", r ? r.throughput.jobs_per_hour.toFixed(2) + "/h" : "–",
           r ? r.throughput.succeeded + " ok, " + r.throughput.failed + " failed" : ""),
      card("fairness (Jain)", r && r.fairness.jain_index !== null ? r.fairness.jain_index.toFixed(3) : "–")));
    if (mv('sluice_jobs{state="pending"}') !== null)
      body.appendChild(el("p", { class: "mute", id: "jobs-by-state" }, "jobs in memory by state: " +
        STATES.map((st) => st + " " + mv('sluice_jobs{state="' + st + '"}')).join(", ")));
    body.appendChild(el("h2", {}, "Jobs by tenant and state; share against weight"));
    const wsum = tenants.reduce((a, x) => a + x.weight, 0) || 1;
    const tm = (name, t) => { const v = mv(name + '{tenant="' + t + '"}'); return v === null ? "–" : v; };
    body.appendChild(table(["tenant", "pending", "running", "pending GPUs", "GPUs in use", "dominant share", "weight share", "share / weight", "deficit", "succeeded / failed / cancelled"],
      tenants.map((x) => [x.name, x.pending, x.running, tm("sluice_tenant_pending_gpus", x.name), x.usage.gpus,
                          shareBar(x.dominant_share, x.weight / wsum), pct(x.weight / wsum),
                          x.weight ? (x.dominant_share / (x.weight / wsum)).toFixed(2) : "–",
                          (() => { const v = mv('sluice_tenant_share_deficit_ratio{tenant="' + x.name + '"}'); return v === null ? "–" : pct(v); })(),
                          ["succeeded", "failed", "cancelled"].map((st) => {
                            const v = mv('sluice_jobs_completed_total{tenant="' + x.name + '",state="' + st + '"}');
                            return v === null ? "–" : v;
                          }).join(" / ")])));
    if (r) {
      body.appendChild(el("h2", {}, "Report, last 24 h (sluice report)"));
      const q = r.queueing_delay, s = r.scheduling_delay;
      const maxv = Math.max(q.p99_seconds || 0, s.p99_seconds || 0, 1e-6);
      body.appendChild(table(["delay", "p50", "p90", "p99", "p99 bar"], [
        ["queueing", fmtDur(q.p50_seconds), fmtDur(q.p90_seconds), fmtDur(q.p99_seconds), bar((q.p99_seconds || 0) / maxv)],
        ["scheduling", fmtDur(s.p50_seconds), fmtDur(s.p90_seconds), fmtDur(s.p99_seconds), bar((s.p99_seconds || 0) / maxv)]]));
      const u = r.gpu_utilization, a = r.gpu_allocation;
      body.appendChild(el("dl", { class: "kv" },
        el("dt", {}, "GPU hours allocated"), el("dd", {}, a.gpu_hours_allocated.toFixed(2) + " of " + a.gpu_hours_available.toFixed(0) + " (" + pct(a.ratio) + ")"),
        el("dt", {}, "utilisation of allocated GPUs"), el("dd", {}, pct(u.mean_ratio)),
        el("dt", {}, "idle GPU memory"), el("dd", {}, pct(u.idle_memory_ratio))));
      if (r.tenants && r.tenants.length) {
        body.appendChild(el("h2", {}, "Usage against fair share (24 h)"));
        body.appendChild(table(["tenant", "jobs", "GPU hours", "usage share", "fair share", "usage / fair"],
          r.tenants.map((x) => [x.name, x.jobs, x.gpu_hours.toFixed(2), shareBar(x.usage_share, x.fair_share),
                                pct(x.fair_share), x.usage_to_fair === null ? "–" : x.usage_to_fair.toFixed(2)])));
      }
    }
  };
  await draw();
  onEvents(debounce(() => draw().catch(() => {}), 2000));
}

// The Prometheus text of /metrics as a map "name{labels}" -> number.
function parseMetrics(text) {
  const m = new Map();
  for (const line of String(text).split("\n")) {
    if (!line || line[0] === "#") continue;
    const sp = line.lastIndexOf(" ");
    if (sp > 0) m.set(line.slice(0, sp), Number(line.slice(sp + 1)));
  }
  return m;
}

function card(k, v, sub) {
  return el("div", { class: "card" }, el("div", { class: "v" }, v), el("div", { class: "k" }, k),
            sub ? el("div", { class: "mute" }, sub) : null);
}
function bar(frac) {
  const b = el("div", { class: "bar" });
  const s = el("span");
  s.style.width = Math.max(0, Math.min(1, frac)) * 100 + "%";
  b.appendChild(s);
  return b;
}
function shareBar(share, fair) {
  const b = bar(share);
  const m = el("span", { class: "mark", title: "weight share" });
  m.style.width = Math.max(0, Math.min(1, fair)) * 100 + "%";
  b.appendChild(m);
  return el("span", {}, b, " " + pct(share));
}

function table(head, rows, opts) {
  opts = opts || {};
  const thead = el("tr", {}, head.map((h, i) => {
    const th = el("th", { class: opts.sort ? "sort" : null }, h);
    if (opts.sort) th.addEventListener("click", () => opts.sort(i));
    return th;
  }));
  const tb = el("tbody", {}, rows.map((r) => el("tr", { dataset: r.__id ? { id: r.__id } : undefined },
    r.map((c) => el("td", {}, c)))));
  return el("table", { id: opts.id || null }, el("thead", {}, thead), tb);
}

// ---- the GPU heat map ----

const COLORS = { alloc: "#2f6fdf", shared: "#8fb2f0", idle: "#f1c40f", free: "#d9d9d9",
                 drain: "#e6a23c", unhealthy: "#7d2e8e", down: "#c0392b" };
const HEAT_STATES = ["alloc", "shared", "idle", "free", "drain", "unhealthy", "down"];
const HEAT_WORDS = { alloc: "allocated", shared: "shared", idle: "idle but allocated", free: "free",
                     drain: "free, draining", unhealthy: "unhealthy", down: "down" };
// An allocated GPU whose job's last readings averaged below this is idle.
const IDLE_UTIL = 0.05;

// The state of GPU i of node n: down (the node), unhealthy (its health
// record, or the node's own), allocated but idle (by the utilisation the
// agents report), allocated, shared (part of it allocated), free.
function gpuState(n, i) {
  if (n.state === "down" || !n.connected) return "down";
  const h = n.health;
  if (h && (h.state === "unhealthy" || (h.gpus || []).some((g) => g.gpu === i && (g.state === "unhealthy" || g.fenced))))
    return "unhealthy";
  const mv = (n.free.gpu_milli || [])[i];
  const m = mv === undefined ? 1000 : mv;
  const u = (n.gpu_util || [])[i];
  if (m === 0) return u !== null && u !== undefined && u < IDLE_UTIL ? "idle" : "alloc";
  if (m < 1000) return "shared";
  return n.state === "draining" ? "drain" : "free";
}

// Lays the nodes out by pool: one tile per node (its GPUs side by side),
// tiles wrapped to the canvas width; returns the tiles for hit-testing.
function heatLayout(nodes, width, cell, by) {
  const pools = new Map();
  for (const n of nodes) {
    const p = by === "rack" ? (n.topology || "no topology") : (n.pool || "default");
    if (!pools.has(p)) pools.set(p, []);
    pools.get(p).push(n);
  }
  const tiles = [], labels = [];
  let y = 0;
  const gap = Math.max(1, cell >> 1), rowH = cell + gap;
  for (const [pool, ns] of [...pools.entries()].sort()) {
    const counts = {};
    for (const n of ns) for (let i = 0; i < n.gpus; i++) { const st = gpuState(n, i); counts[st] = (counts[st] || 0) + 1; }
    labels.push({ pool: (by === "rack" ? "rack " : "pool ") + pool, y: y + 14, count: ns.length, counts });
    y += 20;
    let x = 0;
    for (const n of ns) {
      const w = Math.max(1, n.gpus) * cell;
      if (x + w > width) { x = 0; y += rowH; }
      tiles.push({ n, x, y, w });
      x += w + gap;
    }
    y += rowH + 6;
  }
  return { tiles, labels, height: y };
}

// Draws every GPU; with only set, the other states are drawn faint, so
// that the few unhealthy or idle GPUs of 80,000 stand out.
function heatDraw(canvas, nodes, cell, by, only) {
  const width = canvas.parentNode.clientWidth || 1200;
  const lay = heatLayout(nodes, width, cell, by);
  canvas.width = width;
  canvas.height = Math.max(40, lay.height);
  const g = canvas.getContext("2d");
  g.fillStyle = "#fff";
  g.fillRect(0, 0, canvas.width, canvas.height);
  g.font = "12px system-ui, sans-serif";
  for (const l of lay.labels) {
    g.fillStyle = "#333";
    const parts = HEAT_STATES.filter((st) => l.counts[st]).map((st) => l.counts[st] + " " + HEAT_WORDS[st]);
    g.fillText(l.pool + " (" + l.count + " nodes): " + parts.join(", "), 0, l.y);
  }
  for (const t of lay.tiles) {
    const milli = t.n.free.gpu_milli || [];
    for (let i = 0; i < t.n.gpus; i++) {
      const st = gpuState(t.n, i);
      g.globalAlpha = only && st !== only ? 0.15 : 1;
      g.fillStyle = COLORS[st];
      g.fillRect(t.x + i * cell, t.y, cell - (cell > 3 ? 1 : 0), cell);
      if (st === "shared" && cell >= 4) {   // the allocated fraction, from the bottom
        const f = 1 - milli[i] / 1000;
        g.fillStyle = COLORS.alloc;
        g.fillRect(t.x + i * cell, t.y + cell * (1 - f), cell - 1, cell * f);
      }
    }
  }
  g.globalAlpha = 1;
  return lay;
}

async function heatmap(page) {
  page.appendChild(el("h1", {}, "GPU heat map"));
  const status = el("span", { class: "mute", id: "heat-status" });
  const zoom = el("input", { type: "range", min: 1, max: 24, value: S.heatCell || 4, id: "heat-zoom" });
  const group = el("select", { id: "heat-group" }, el("option", { value: "pool" }, "by pool"),
                  el("option", { value: "rack" }, "by rack (topology)"));
  group.value = S.heatGroup || "pool";
  const only = el("select", { id: "heat-only" }, el("option", { value: "" }, "every state"),
                 HEAT_STATES.map((st) => el("option", { value: st }, "only " + HEAT_WORDS[st])));
  page.appendChild(el("div", { class: "toolbar" }, "zoom", zoom, group, only, el("span", { class: "legend" },
    HEAT_STATES.map((st) => [el("span", { class: st }), st === "shared" ? "shared (lower part: its fraction)" :
                             st === "idle" ? "idle but allocated (under " + IDLE_UTIL * 100 + "% busy)" : HEAT_WORDS[st]])), status));
  const wrap = el("div");
  const canvas = el("canvas", { id: "heat" });
  const tip = el("div", { id: "tip", hidden: true });
  wrap.appendChild(canvas);
  page.appendChild(wrap);
  page.appendChild(tip);
  let nodes = [], lay = null;
  const draw = () => {
    const t0 = performance.now();
    lay = heatDraw(canvas, nodes, S.heatCell, group.value, only.value);
    const ms = performance.now() - t0;
    const gpus = nodes.reduce((a, n) => a + n.gpus, 0);
    status.textContent = nodes.length + " nodes, " + gpus + " GPUs; drawn in " + ms.toFixed(0) + " ms";
    const counts = {};
    for (const t of lay.tiles) for (let i = 0; i < t.n.gpus; i++) { const st = gpuState(t.n, i); counts[st] = (counts[st] || 0) + 1; }
    canvas.dataset.states = JSON.stringify(counts);
    canvas.dataset.drawMs = ms.toFixed(1);
    canvas.dataset.nodes = String(nodes.length);
  };
  const load = async () => {
    nodes = await allNodes();
    if (S.heatCell === null) {   // a few nodes large, 10,000 in about two screens
      S.heatCell = nodes.length <= 200 ? 14 : nodes.length <= 2000 ? 8 : 4;
      zoom.value = S.heatCell;
    }
    draw();
  };
  zoom.addEventListener("input", () => { S.heatCell = Number(zoom.value); draw(); });
  group.addEventListener("change", () => { S.heatGroup = group.value; draw(); });
  only.addEventListener("change", draw);
  canvas.addEventListener("mousemove", (e) => {
    if (!lay) return;
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    const cell = S.heatCell;
    const t = lay.tiles.find((t) => x >= t.x && x < t.x + t.w && y >= t.y && y < t.y + cell);
    if (!t) { tip.hidden = true; return; }
    const i = Math.floor((x - t.x) / cell);
    const m = (t.n.free.gpu_milli || [])[i];
    const u = (t.n.gpu_util || [])[i];
    const hg = ((t.n.health && t.n.health.gpus) || []).find((x) => x.gpu === i);
    tip.textContent = t.n.name + " GPU " + i + ": " + HEAT_WORDS[gpuState(t.n, i)] +
      (m > 0 && m < 1000 ? " (" + (100 - m / 10).toFixed(0) + "% allocated)" : "") +
      (u !== null && u !== undefined ? ", " + (100 * u).toFixed(0) + "% busy" : "") +
      (hg && hg.message ? ", " + hg.message : "") + ", " + (t.n.gpu_model || "");
    tip.style.left = e.clientX + 12 + "px";
    tip.style.top = e.clientY + 12 + "px";
    tip.hidden = false;
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  await load();
  onEvents(debounce(() => load().catch(() => {}), 2000));
}

// ---- jobs ----

const STATES = ["pending", "running", "succeeded", "failed", "cancelled"];

function jobRow(j) {
  const gpus = j.gpus ? j.gpus * j.tasks : 0;
  const link = el("a", { href: "#/job/" + j.id }, String(j.id));
  const row = [link, j.name || "", j.tenant || "", j.state, String(gpus), fmtTime(j.submit_time),
               el("span", { class: "reason" }, j.reason || "")];
  row.__id = String(j.id);
  return row;
}

async function jobs(page) {
  const q = S.jobsQuery;
  page.appendChild(el("h1", {}, "Jobs"));
  const state = el("select", { id: "f-state" },
    el("option", { value: "pending,running" }, "pending and running"),
    el("option", { value: STATES.join(",") }, "all"),
    STATES.map((s) => el("option", { value: s }, s)));
  state.value = q.state;
  const tenant = el("input", { id: "f-tenant", placeholder: "tenant", size: 10, value: q.tenant });
  const name = el("input", { id: "f-name", placeholder: "name contains", size: 14, value: q.name });
  const limit = el("select", { id: "f-limit" }, [50, 100, 500, 1000].map((n) => el("option", { value: n }, String(n))));
  limit.value = String(q.limit);
  const prev = el("button", { type: "button" }, "‹ prev"), next = el("button", { type: "button" }, "next ›");
  const info = el("span", { class: "mute" });
  page.appendChild(el("div", { class: "toolbar" }, state, tenant, name, limit, prev, next, info));
  const holder = el("div");
  page.appendChild(holder);
  let rows = [], nextAfter = null, newer = 0;
  const render = () => {
    const cols = ["id", "name", "tenant", "state", "gpus", "submit_time", "reason"];
    const key = cols[["id", "name", "tenant", "state", "gpus", "submit_time", "reason"].indexOf(q.sort)] || "id";
    const shown = rows.filter((j) => !q.name || (j.name || "").includes(q.name));
    shown.sort((a, b) => {
      const va = key === "gpus" ? a.gpus * a.tasks : a[key], vb = key === "gpus" ? b.gpus * b.tasks : b[key];
      const c = va < vb ? -1 : va > vb ? 1 : 0;
      return q.desc ? -c : c;
    });
    clear(holder).appendChild(table(["id", "name", "tenant", "state", "GPUs", "submitted", "reason"],
      shown.map(jobRow), { id: "jobs-table", sort: (i) => { q.desc = q.sort === cols[i] ? !q.desc : false; q.sort = cols[i]; render(); } }));
    info.textContent = shown.length + " shown" + (nextAfter ? ", more after id " + nextAfter : "") +
      (newer ? "; " + newer + " new since on later pages" : "");
    prev.disabled = q.stack.length === 0;
    next.disabled = !nextAfter;
  };
  const load = async () => {
    let path = "/v1/jobs?limit=" + q.limit + "&state=" + encodeURIComponent(q.state);
    if (q.tenant) path += "&tenant=" + encodeURIComponent(q.tenant);
    if (q.after) path += "&after=" + q.after;
    const { data } = await api("GET", path);
    rows = data.jobs;
    nextAfter = data.next_after;
    newer = 0;
    render();
  };
  const reload = () => load().catch((e) => clear(holder).appendChild(el("p", { class: "error" }, e.message)));
  state.addEventListener("change", () => { q.state = state.value; q.after = 0; q.stack = []; reload(); });
  tenant.addEventListener("change", () => { q.tenant = tenant.value.trim(); q.after = 0; q.stack = []; reload(); });
  name.addEventListener("input", () => { q.name = name.value; render(); });
  limit.addEventListener("change", () => { q.limit = Number(limit.value); q.after = 0; q.stack = []; reload(); });
  next.addEventListener("click", () => { q.stack.push(q.after); q.after = nextAfter; reload(); });
  prev.addEventListener("click", () => { q.after = q.stack.pop() || 0; reload(); });
  await load();
  // Live: a job's event updates its row in place, or adds it when it
  // belongs on this page (its state is listed; a new id on the last page).
  onEvents((ev) => {
    if (!ev.data || !ev.data.job) { if (ev.event === "reset") reload(); return; }
    const j = ev.data.job;
    const i = rows.findIndex((r) => r.id === j.id);
    const listed = q.state.split(",").includes(j.state) && (!q.tenant || q.tenant === j.tenant);
    if (i >= 0) { if (listed) rows[i] = j; else rows.splice(i, 1); }
    else if (listed && !nextAfter && j.id > q.after) rows.push(j);
    else if (listed && ev.event === "job.submitted" && nextAfter) newer++;
    else return;
    render();
  });
}

function kv(pairs) {
  return el("dl", { class: "kv" }, pairs.filter((p) => p[1] !== null && p[1] !== undefined && p[1] !== "")
    .map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

// ---- nodes and tenants ----

async function nodes(page) {
  page.appendChild(el("h1", {}, "Nodes"));
  const holder = el("div");
  page.appendChild(holder);
  const msg = el("p", { class: "error" });
  page.appendChild(msg);
  const PAGE = 500;   // rows at a time: 10,000 nodes are 20 pages, not one 10,000-row table
  let at = 0;
  const filter = el("input", { id: "n-filter", placeholder: "name contains", size: 14 });
  const prev = el("button", { type: "button" }, "‹ prev"), next = el("button", { type: "button" }, "next ›");
  const info = el("span", { class: "mute" });
  page.insertBefore(el("div", { class: "toolbar" }, filter, prev, next, info), holder);
  filter.addEventListener("input", () => { at = 0; draw(); });
  prev.addEventListener("click", () => { at = Math.max(0, at - PAGE); draw(); });
  next.addEventListener("click", () => { at += PAGE; draw(); });
  const draw = async () => {
    const all = (await allNodes()).filter((n) => !filter.value || n.name.includes(filter.value));
    const ns = all.slice(at, at + PAGE);
    info.textContent = (all.length ? at + 1 : 0) + "–" + (at + ns.length) + " of " + all.length + " nodes";
    prev.disabled = at === 0;
    next.disabled = at + PAGE >= all.length;
    const rows = ns.map((n) => {
      const acts = [];
      if (S.admin) {
        if (n.drain) acts.push(el("button", { type: "button", class: "resume", on: { click: () => act("/v1/nodes/resume", { node: n.name }) } }, "Resume"));
        else acts.push(el("button", { type: "button", class: "drain", on: { click: () => {
          const reason = window.prompt("Why is " + n.name + " drained?", "maintenance");
          if (reason !== null) act("/v1/nodes/drain", { node: n.name, reason });
        } } }, "Drain"));
      }
      return [n.name, n.state + (n.connected ? "" : " (disconnected)"), n.pool || "", n.gpu_model || "",
              n.free.gpus + " / " + n.gpus, n.free.cpus + " / " + n.cpus, n.free.memory + " / " + n.memory,
              String(n.tasks), n.drain ? n.drain.reason || "draining" : "", el("span", {}, acts)];
    });
    clear(holder).appendChild(table(["node", "state", "pool", "GPU model", "free GPUs", "free CPUs", "free memory", "tasks", "drain", ""], rows, { id: "nodes-table" }));
  };
  const act = async (path, body) => {
    try { await api("POST", path, body); msg.textContent = ""; await draw(); } catch (e) { msg.textContent = e.message; }
  };
  await draw();
  onEvents(debounce(() => draw().catch(() => {}), 1000));
}

// ---- submit: the flags of `sluice submit` as a form, or a JSON spec file ----

const FIELDS = [
  ["name", "text", "a name for the job (1 to 63 characters)"],
  ["tenant", "text", "whose job (the admin token must name one; a tenant's is its own)"],
  ["command", "text", "run by sh -c on every task"],
  ["gpus", "number", "GPUs per task (0 to 16)"],
  ["tasks", "number", "tasks (gang: all start together)"],
  ["cpus", "text", "CPUs per task (1, 500m)"],
  ["memory", "text", "memory per task (1Gi, 512Mi)"],
  ["gpu_memory", "text", "at least this much memory per GPU (40Gi)"],
  ["pool", "text", "the node pool"],
  ["priority", "number", "priority within the tenant"],
  ["time_limit", "number", "seconds; 0: the default"],
  ["image", "text", "container image"],
];

async function submit(page) {
  page.appendChild(el("h1", {}, "Submit a job"));
  const form = el("form", { class: "spec", id: "submit-form" });
  const inputs = {};
  for (const [k, type, help] of FIELDS) {
    inputs[k] = el("input", { name: k, id: "s-" + k, type, size: 30 });
    form.appendChild(el("label", {}, el("span", {}, k), inputs[k], el("span", { class: "help" }, help)));
  }
  const file = el("input", { type: "file", id: "s-file", accept: ".json,application/json" });
  form.appendChild(el("label", {}, el("span", {}, "or a spec file"), file,
    el("span", { class: "help" }, "a JSON job spec (docs/jobspec.md); fields above override it")));
  const out = el("p", { id: "submit-result" });
  form.appendChild(el("button", { type: "submit" }, "Submit"));
  page.appendChild(form);
  page.appendChild(out);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    let spec = {};
    try {
      if (file.files.length) spec = JSON.parse(await file.files[0].text());
    } catch (err) {
      out.className = "error";
      out.textContent = "the spec file is not JSON: " + err.message;
      return;
    }
    for (const [k, type] of FIELDS) {
      const v = inputs[k].value.trim();
      if (!v) continue;
      if (k === "command") spec.command = ["sh", "-c", v];
      else spec[k] = type === "number" ? Number(v) : v;
    }
    try {
      const { data } = await api("POST", "/v1/jobs", spec);
      out.className = "";
      clear(out).appendChild(el("span", {}, "submitted ", el("a", { href: "#/job/" + data.id }, "job " + data.id),
        ": " + data.state + (data.reason ? " (" + data.reason + ")" : "")));
    } catch (err) {
      out.className = "error";
      out.textContent = (err.field && !err.message.startsWith(err.field) ? err.field + ": " : "") + err.message;
    }
  });
}

// ---- start ----

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    login($("token").value.trim()).catch((err) => {
      S.token = "";
      $("login-error").textContent = "cannot log in: " + err.message;
    });
  });
  $("logout").addEventListener("click", () => {
    sessionStorage.removeItem("sluice.token");
    S.token = "";
    if (S.stream) S.stream.abort();
    showLogin();
  });
  window.addEventListener("hashchange", route);
  if (S.token) login(S.token).catch(() => { S.token = ""; sessionStorage.removeItem("sluice.token"); showLogin(); });
  else showLogin();
});
