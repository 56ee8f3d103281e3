// jobpage.js - the console's page of one job (docs/console.md): its state
// and reason in words, placement, efficiency, attempts, preemptions, size
// history, spec, and a live tail of a task's output read from
// GET /v1/jobs/ID/logs/stream (Server-Sent Events through fetch, which
// sends the token in its header). Text only, as app.js.
"use strict";

const LOG_KEEP = 256 * 1024;   // characters of output the page keeps (the tail)

function gib(bytes) {
  if (bytes === null || bytes === undefined) return "–";
  return (bytes / (1 << 30)).toFixed(bytes < (10 << 30) ? 2 : 1) + " GiB";
}

// The efficiency object in words, or "" when nothing was measured.
function effWords(e) {
  if (!e) return "not measured (no usage reported yet)";
  const parts = [];
  if (e.gpu_util_mean !== null && e.gpu_util_mean !== undefined)
    parts.push("GPUs " + pct(e.gpu_util_mean) + " busy on average (peak " + pct(e.gpu_util_peak) + ")");
  if (e.gpu_mem_peak !== null && e.gpu_mem_peak !== undefined)
    parts.push("GPU memory peak " + gib(e.gpu_mem_peak) + (e.gpu_mem_total ? " of " + gib(e.gpu_mem_total) + " per GPU" : ""));
  if (e.cpu_seconds !== null && e.cpu_seconds !== undefined) parts.push(fmtDur(e.cpu_seconds) + " of CPU time");
  if (e.mem_peak !== null && e.mem_peak !== undefined) parts.push("memory peak " + gib(e.mem_peak));
  if (e.no_nvml_node) parts.push("node " + e.no_nvml_node + " cannot measure its GPUs");
  return parts.length ? parts.join("; ") + " (" + e.samples + " GPU readings)" : "nothing measured";
}

// Follows task's output: appends each piece to pre as text; stops at the
// task's end (eof), on an error, or when the page is left.
function followLog(id, task, pre, status) {
  const ctl = new AbortController();
  S.cleanups.push(() => ctl.abort());
  let offset = 0;
  const add = (text) => {
    let t = pre.textContent + text;
    if (t.length > LOG_KEEP) t = t.slice(t.length - LOG_KEEP);
    pre.textContent = t;
    pre.scrollTop = pre.scrollHeight;
  };
  (async () => {
    for (let tries = 0; tries < 20 && !ctl.signal.aborted; tries++) {
      let ended = false;
      try {
        const r = await fetch("/v1/jobs/" + encodeURIComponent(id) + "/logs/stream?task=" + task + "&offset=" + offset, {
          headers: { "Authorization": "Bearer " + S.token, "Accept": "text/event-stream" },
          signal: ctl.signal, cache: "no-store" });
        if (!r.ok) {
          const body = await r.json().catch(() => null);
          status.textContent = body && body.error ? body.error.message : "HTTP " + r.status;
          if (r.status === 409) { await new Promise((res) => setTimeout(res, 1000)); continue; }
          return;
        }
        status.textContent = "live";
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
            if (!ev || !ev.data) continue;
            if (ev.event === "log" && typeof ev.data.data === "string") {
              const skip = Math.max(0, offset - ev.data.offset);
              add(ev.data.data.slice(skip));
              offset = Math.max(offset, ev.data.offset + ev.data.data.length);
              pre.dataset.offset = String(offset);
            } else if (ev.event === "eof") {
              ended = true;
              status.textContent = "the task has ended";
            } else if (ev.event === "error") {
              ended = true;
              status.textContent = ev.data.message || "the log stream failed";
            }
          }
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
      }
      if (ended) return;
      status.textContent = "reconnecting";
      await new Promise((res) => setTimeout(res, 1000));
    }
  })();
}

async function job(page, id) {
  const head = el("h1");
  const body = el("div");
  page.appendChild(head);
  page.appendChild(body);
  const tasksel = el("select", { id: "log-task" });
  const logStatus = el("span", { class: "mute", id: "log-status" });
  const log = el("pre", { class: "log", id: "job-log" });
  let following = null;   // the task whose output is followed
  const startTail = (j) => {
    const t = Number(tasksel.value || 0);
    if (following === t || !j.placement || !j.placement.length) return;
    if (following !== null) { for (const fn of S.cleanups.splice(0)) fn(); log.textContent = ""; }
    following = t;
    followLog(j.id, t, log, logStatus);
  };
  tasksel.addEventListener("change", () => { following = null; startTail(S.jobNow); });
  const draw = async () => {
    const { data: j } = await api("GET", "/v1/jobs/" + encodeURIComponent(id));
    S.jobNow = j;
    head.textContent = "Job " + j.id + (j.name ? " " + j.name : "");
    clear(body);
    const cancel = el("button", { type: "button", id: "cancel", disabled: !(j.state === "pending" || j.state === "running") }, "Cancel");
    const msg = el("span", { class: "error" });
    cancel.addEventListener("click", async () => {
      try { await api("DELETE", "/v1/jobs/" + j.id); } catch (e) { msg.textContent = e.message; }
    });
    body.appendChild(el("div", { class: "toolbar" }, cancel, msg));
    body.appendChild(kv([
      ["state", el("span", { id: "job-state" }, j.state)],
      [j.state === "pending" ? "waiting because" : "reason", j.reason ? el("span", { class: "reason", id: "job-reason" }, j.reason) : ""],
      ["tenant", j.tenant], ["tasks", j.tasks + (j.min_tasks !== j.tasks ? " (at least " + j.min_tasks + ")" : "")],
      ["per task", j.gpus + " GPU" + (j.gpu_share ? " (share " + j.gpu_share + ")" : "") + ", " + j.cpus + " CPU, " + j.memory],
      ["GPU models", (j.gpu_models || []).join(", ")], ["pool", j.pool], ["priority", String(j.priority) + (j.priority_class ? " (" + j.priority_class + ")" : "")],
      ["command", (j.command || []).join(" ")], ["image", j.image],
      ["submitted", fmtTime(j.submit_time)], ["started", fmtTime(j.start_time)], ["ended", fmtTime(j.end_time)],
      ["exit code", j.exit_code === null ? "" : String(j.exit_code)],
      ["attempt", j.attempt ? el("span", { id: "job-attempt" }, j.attempt + " of " + ((j.retries || 0) + 1) +
        (j.retry_at ? ", next not before " + fmtTime(j.retry_at) : "")) : ""],
      ["requeues", String(j.requeues)],
      ["efficiency", el("span", { id: "job-eff" }, effWords(j.efficiency))]]));
    if (j.placement && j.placement.length) {
      body.appendChild(el("h2", {}, "Placement"));
      body.appendChild(table(["task", "node", "GPUs", "state", "pid", "exit"],
        j.placement.map((p) => [String(p.task), p.node || "", (p.gpus || []).join(",") + (p.gpu_milli ? " (" + p.gpu_milli / 10 + "%)" : ""),
                                p.state, p.pid === null ? "" : String(p.pid), p.exit_code === null ? "" : String(p.exit_code)]), { id: "job-placement" }));
    }
    if (j.attempts && j.attempts.length) {
      body.appendChild(el("h2", {}, "Attempts"));
      body.appendChild(table(["attempt", "started", "ended", "exit code", "why it ended", "retried from"],
        j.attempts.map((a) => [String(a.attempt), fmtTime(a.start_time), fmtTime(a.end_time),
                               a.exit_code === null ? "" : String(a.exit_code), a.reason || "", fmtTime(a.retry_at)])
          .concat([[String(j.attempt) + " (this one)", fmtTime(j.start_time), fmtTime(j.end_time),
                    j.exit_code === null ? "" : String(j.exit_code), j.state === "pending" || j.state === "running" ? j.state : j.reason || j.state, ""]]),
        { id: "job-attempts" }));
    }
    if (j.size_history !== undefined) {   // elastic
      body.appendChild(el("h2", {}, "Size history"));
      body.appendChild(kv([["size now", el("span", { id: "job-size" }, j.size + " of " + j.min_tasks + " to " + j.tasks + " tasks")]]));
      if (j.size_history.length) {
        const now = Date.now() / 1000;
        const pts = j.size_history.map((z) => [z.time, z.size]);
        if (j.state === "running") pts.push([now, j.size]);
        body.appendChild(lineChart([{ name: "tasks", points: pts }],
          { id: "job-size-chart", step: true, min: 0, max: j.tasks, height: 140, fmt: (v) => String(Math.round(v)) }));
        body.appendChild(table(["when", "size", "why"], j.size_history.map((z) => [fmtTime(z.time), String(z.size), z.why || ""]),
          { id: "job-sizes" }));
      }
    }
    if (j.preemptions && j.preemptions.length) {
      body.appendChild(el("h2", {}, "Preemptions"));
      body.appendChild(table(["when", "kind", "cause", "by", "why", "tasks", "GPU time lost"],
        j.preemptions.map((p) => [fmtTime(p.time), p.kind, p.cause, p.by_job ? "job " + p.by_job + (p.by_tenant ? " of " + p.by_tenant : "") : "",
                                  p.reason || "", String(p.tasks), fmtDur(p.gpu_seconds_lost) + " GPU"]), { id: "job-preemptions" }));
    }
    body.appendChild(el("h2", {}, "Spec"));
    const spec = Object.assign({}, j);
    for (const k of ["state", "reason", "placement", "efficiency", "preemptions", "start_time", "end_time", "exit_code",
                     "attempt", "attempts", "size", "size_history", "retry_at", "requeues"]) delete spec[k];
    body.appendChild(el("pre", { id: "job-spec" }, JSON.stringify(spec, null, 2)));
    const n = j.placement ? j.placement.length : 0;
    if (tasksel.options.length !== n) {
      clear(tasksel);
      for (let t = 0; t < n; t++) tasksel.appendChild(el("option", { value: t }, "task " + t));
    }
    body.appendChild(el("h2", {}, "Output ", n > 1 ? tasksel : "of task 0", " ", logStatus));
    body.appendChild(log);
    if (!n) logStatus.textContent = "(the job has not started)";
    startTail(j);
  };
  await draw();
  onEvents((ev) => {
    if (ev.data && ev.data.job && String(ev.data.job.id) === String(id)) draw().catch(() => {});
  });
}
