// reportpage.js - the console's Tenants and Report pages (docs/console.md):
// share against weight against quota, pending demand and each tenant's
// GPUs over time; `sluice report`'s window as charts over time, from
// GET /v1/report?since=S&buckets=N (its "series"). Text only, as app.js.
"use strict";

const WINDOWS = [["3600", "last hour"], ["86400", "last 24 hours"], ["604800", "last 7 days"], ["2592000", "last 30 days"]];
const BUCKETS = 48;

function windowSelect(id, value) {
  const w = el("select", { id }, WINDOWS.map(([v, t]) => el("option", { value: v }, t)));
  w.value = value || "86400";
  return w;
}

// The report of the window with its series; at most one at a time, kept
// 30 s per window (the controller computes one report at a time).
const reportCache = new Map();
async function seriesReport(since) {
  const c = reportCache.get(since);
  if (c && Date.now() - c.at < 30000) return c.data;
  const { data } = await api("GET", "/v1/report?since=" + since + "&buckets=" + BUCKETS);
  reportCache.set(since, { at: Date.now(), data });
  return data;
}

// [t, v] of each bucket's middle, v = f(bucket).
function bucketPoints(rep, f) {
  const half = rep.series.bucket_seconds / 2;
  return rep.series.buckets.map((b) => [b.since + half, f(b)]);
}

function secs(v) { return v === null || v === undefined ? null : v; }

async function tenants(page) {
  page.appendChild(el("h1", {}, "Tenants"));
  const win = windowSelect("t-window", S.tenantsWindow);
  page.appendChild(el("div", { class: "toolbar" }, "history over the", win));
  const holder = el("div");
  page.appendChild(holder);
  const draw = async () => {
    const [{ data }, metrics, rep] = await Promise.all([
      api("GET", "/v1/tenants"),
      api("GET", "/metrics").then((r) => parseMetrics(r.data)).catch(() => new Map()),
      seriesReport(win.value).catch(() => null)]);
    const hist = new Map(((rep && rep.tenants) || []).map((t) => [t.name, t]));
    const cap = rep ? Number(rep.gpu_allocation.capacity_gpus) : 0;
    const wsum = data.tenants.reduce((a, x) => a + x.weight, 0) || 1;
    const pendingGpus = (name) => {
      const v = metrics.get('sluice_tenant_pending_gpus{tenant="' + name + '"}');
      return v === undefined || Number.isNaN(v) ? null : v;
    };
    const quotaGpus = (t) => t.quota && t.quota.gpus !== undefined && t.quota.gpus !== null ? Number(t.quota.gpus) : null;
    clear(holder);
    holder.appendChild(table(["tenant", "weight", "quota", "pending jobs", "pending GPUs", "running", "in use", "dominant share",
                              "weight share", "quota share", "GPU hours (window)", "usage / fair (window)"],
      data.tenants.map((t) => {
        const h = hist.get(t.name);
        const q = t.quota ? Object.entries(t.quota).map(([k, v]) => k + " " + v).join(", ") : "none";
        const qg = quotaGpus(t);
        const pg = pendingGpus(t.name);
        return [t.name, String(t.weight), q, String(t.pending), pg === null ? "–" : String(pg), String(t.running),
                t.usage.gpus + " GPUs, " + t.usage.cpus + " CPUs, " + t.usage.memory,
                shareBar(t.dominant_share, t.weight / wsum), pct(t.weight / wsum),
                qg !== null && cap ? pct(qg / cap) : "–",
                h ? h.gpu_hours.toFixed(2) : "–", h && h.usage_to_fair !== null ? h.usage_to_fair.toFixed(2) : "–"];
      }), { id: "tenants-table" }));
    holder.appendChild(el("h2", {}, "Share against weight against quota"));
    holder.appendChild(el("p", { class: "mute" }, "bar: dominant share now; dark tick: the weight's share; red tick: the quota's share of the cluster's GPUs"));
    holder.appendChild(barChart(data.tenants.map((t) => {
      const qg = quotaGpus(t);
      return { name: t.name, value: t.dominant_share, mark: t.weight / wsum, limit: qg !== null && cap ? Math.min(1, qg / cap) : null };
    }), { id: "tenants-shares", fmt: pct }));
    holder.appendChild(el("h2", {}, "Pending demand"));
    holder.appendChild(barChart(data.tenants.map((t) => ({ name: t.name, value: pendingGpus(t.name) || 0 })),
      { id: "tenants-pending", fmt: (v) => v + " GPUs waiting" }));
    holder.appendChild(el("h2", {}, "GPUs held over time"));
    if (rep && rep.series) {
      const names = [...new Set(rep.series.buckets.flatMap((b) => b.tenants.map((t) => t.name)))].sort();
      const hours = rep.series.bucket_seconds / 3600;
      holder.appendChild(lineChart(names.map((n) => ({
        name: n, points: bucketPoints(rep, (b) => { const t = b.tenants.find((x) => x.name === n); return t ? t.gpu_hours / hours : 0; }) })),
        { id: "tenants-history", legend: true, t0: rep.window.since, t1: rep.window.until, title: "mean GPUs held per " + fmtDur(rep.series.bucket_seconds) + " (from the database)",
          fmt: (v) => v.toFixed(1) }));
    } else {
      holder.appendChild(el("p", { class: "mute" }, "the report is not available now"));
    }
  };
  win.addEventListener("change", () => { S.tenantsWindow = win.value; draw().catch(() => {}); });
  await draw();
  onEvents(debounce(() => draw().catch(() => {}), 2000));
}

async function report(page) {
  page.appendChild(el("h1", {}, "Report"));
  const win = windowSelect("r-window", S.reportWindow);
  page.appendChild(el("div", { class: "toolbar" }, "the window of sluice report:", win));
  const holder = el("div");
  page.appendChild(holder);
  const draw = async () => {
    const r = await seriesReport(win.value);
    clear(holder);
    const q = r.queueing_delay, s = r.scheduling_delay, u = r.gpu_utilization, a = r.gpu_allocation;
    holder.appendChild(el("div", { class: "cards" },
      card("jobs ran", r.throughput.jobs_ran, r.throughput.jobs_per_hour.toFixed(2) + " an hour"),
      card("queueing delay p50 / p99", fmtDur(q.p50_seconds) + " / " + fmtDur(q.p99_seconds)),
      card("scheduling delay p50 / p99", fmtDur(s.p50_seconds) + " / " + fmtDur(s.p99_seconds)),
      card("GPUs allocated", pct(a.ratio), a.gpu_hours_allocated.toFixed(1) + " of " + a.gpu_hours_available.toFixed(0) + " GPU hours"),
      card("utilisation of allocated GPUs", pct(u.mean_ratio)),
      card("idle GPU memory", pct(u.idle_memory_ratio)),
      card("fairness (Jain)", r.fairness.jain_index === null ? "–" : r.fairness.jain_index.toFixed(3))));
    const row = el("div", { class: "charts" });
    holder.appendChild(row);
    const delay = (key) => ["p50", "p90", "p99"].map((p) => ({
      name: key.replace("_delay", "") + " " + p, points: bucketPoints(r, (b) => secs(b[key][p + "_seconds"])) }));
    row.appendChild(lineChart(delay("queueing_delay"), { id: "chart-queueing", t0: r.window.since, t1: r.window.until, title: "queueing delay (submit to start) by the jobs' end", fmt: fmtDur }));
    row.appendChild(lineChart(delay("scheduling_delay"), { id: "chart-scheduling", t0: r.window.since, t1: r.window.until, title: "scheduling delay (the scheduler's own decision time)", fmt: fmtDur }));
    row.appendChild(lineChart([
      { name: "GPUs allocated", points: bucketPoints(r, (b) => b.gpu_allocation_ratio) },
      { name: "utilisation of allocated GPUs", points: bucketPoints(r, (b) => b.gpu_util_mean) }],
      { id: "chart-utilisation", t0: r.window.since, t1: r.window.until, title: "allocation and utilisation", min: 0, max: 1, fmt: pct }));
    row.appendChild(lineChart([{ name: "idle GPU memory", points: bucketPoints(r, (b) => b.idle_memory_ratio) }],
      { id: "chart-idle-memory", t0: r.window.since, t1: r.window.until, title: "idle GPU memory of the allocated GPUs (1 - peak / total)", min: 0, max: 1, fmt: pct, legend: true }));
    holder.appendChild(el("p", { class: "mute" }, "each point: one " + fmtDur(r.series.bucket_seconds) + " part of the window; from "
      + fmtTime(r.window.since) + " to " + fmtTime(r.window.until) + (r.scope === "tenant" ? " (your tenant's jobs only)" : "")));
  };
  win.addEventListener("change", () => { S.reportWindow = win.value; draw().catch((e) => { clear(holder).appendChild(el("p", { class: "error" }, e.message)); }); });
  await draw();
}
