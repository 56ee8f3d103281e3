// charts.js - the console's charts (docs/console.md): small SVG drawn here,
// no library. Every label goes in as a text node (createTextNode through
// svgText), never as markup. Loaded before app.js; the functions are
// called once every script has loaded.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";

function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}
function svgText(x, y, text, attrs) {
  const t = svg("text", Object.assign({ x, y }, attrs || {}));
  t.appendChild(document.createTextNode(String(text)));
  return t;
}

const SERIES_COLORS = ["#2f6fdf", "#e67e22", "#27ae60", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#d35400"];

// A time-series line chart: series [{name, points: [[t (s), v], ...]}],
// opts {id, width, height, fmt (value -> text), min, max, t0, t1 (the
// time axis; default: the points'), step (a step
// line, for sizes)}. Gaps (v null) break a line. Returns a <figure>.
function lineChart(series, opts) {
  opts = opts || {};
  const W = opts.width || 560, H = opts.height || 180, L = 56, R = 10, T = 10, B = 34;
  const root = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, class: "chart", role: "img" });
  const pts = series.flatMap((s) => s.points.filter((p) => p[1] !== null && p[1] !== undefined));
  const fig = document.createElement("figure");
  fig.className = "chart";
  if (opts.id) fig.id = opts.id;
  if (opts.title) {
    const c = document.createElement("figcaption");
    c.textContent = opts.title;
    fig.appendChild(c);
  }
  fig.appendChild(root);
  if (!pts.length) {
    root.appendChild(svgText(W / 2, H / 2, "no data in this window", { "text-anchor": "middle", class: "mute" }));
    return fig;
  }
  const t0 = opts.t0 !== undefined ? opts.t0 : Math.min(...pts.map((p) => p[0]));
  const t1 = opts.t1 !== undefined ? opts.t1 : Math.max(...pts.map((p) => p[0]));
  let v0 = opts.min !== undefined ? opts.min : Math.min(0, ...pts.map((p) => p[1]));
  let v1 = opts.max !== undefined ? opts.max : Math.max(...pts.map((p) => p[1]));
  if (v1 <= v0) v1 = v0 + 1;
  const fmt = opts.fmt || ((v) => String(Math.round(v * 100) / 100));
  const x = (t) => L + (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5) * (W - L - R);
  const y = (v) => T + (1 - (v - v0) / (v1 - v0)) * (H - T - B);
  // Axes: 4 value ticks, 3 time ticks.
  for (let k = 0; k <= 4; k++) {
    const v = v0 + (v1 - v0) * k / 4;
    root.appendChild(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
    root.appendChild(svgText(L - 4, y(v) + 4, fmt(v), { "text-anchor": "end", class: "tick" }));
  }
  for (let k = 0; k <= 2; k++) {
    const t = t0 + (t1 - t0) * k / 2;
    const d = new Date(t * 1000);
    const label = (t1 - t0 > 2 * 86400 ? d.toLocaleDateString() + " " : "") +
      d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    root.appendChild(svgText(x(t), H - B + 16, label, { "text-anchor": k === 0 ? "start" : k === 2 ? "end" : "middle", class: "tick" }));
  }
  series.forEach((s, i) => {
    const color = s.color || SERIES_COLORS[i % SERIES_COLORS.length];
    let d = "", pen = false, last = null;
    for (const p of s.points) {
      if (p[1] === null || p[1] === undefined) { pen = false; continue; }
      if (opts.step && pen && last !== null) d += "L" + x(p[0]).toFixed(1) + "," + y(last).toFixed(1);
      d += (pen ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1);
      pen = true;
      last = p[1];
    }
    const path = svg("path", { d, fill: "none", stroke: color, "stroke-width": 2, class: "series" });
    path.dataset.name = s.name;
    path.dataset.points = String(s.points.filter((p) => p[1] !== null && p[1] !== undefined).length);
    root.appendChild(path);
    for (const p of s.points)   // the points themselves: one sample still shows
      if (p[1] !== null && p[1] !== undefined)
        root.appendChild(svg("circle", { cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 2.2, fill: color }));
  });
  if (series.length > 1 || opts.legend) {
    const lg = document.createElement("div");
    lg.className = "legend";
    series.forEach((s, i) => {
      const sw = document.createElement("span");
      sw.style.background = s.color || SERIES_COLORS[i % SERIES_COLORS.length];
      lg.appendChild(sw);
      lg.appendChild(document.createTextNode(s.name));
    });
    fig.appendChild(lg);
  }
  return fig;
}

// Horizontal bars, one row per item: [{name, value, mark (a second value,
// drawn as a tick), max}], opts {fmt, id}. Returns an <svg>.
function barChart(items, opts) {
  opts = opts || {};
  const W = opts.width || 560, rowH = 20, L = 120, R = 70;
  const H = Math.max(1, items.length) * rowH + 8;
  const root = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, class: "chart bars" });
  if (opts.id) root.id = opts.id;
  const max = Math.max(1e-9, ...items.map((it) => Math.max(it.value || 0, it.mark || 0, it.limit || 0)));
  const fmt = opts.fmt || ((v) => String(v));
  items.forEach((it, k) => {
    const yy = 4 + k * rowH;
    const w = (W - L - R);
    root.appendChild(svgText(L - 6, yy + 13, it.name, { "text-anchor": "end", class: "tick" }));
    root.appendChild(svg("rect", { x: L, y: yy + 3, width: w, height: 12, class: "track" }));
    root.appendChild(svg("rect", { x: L, y: yy + 3, width: (w * Math.max(0, it.value || 0) / max).toFixed(1), height: 12, class: "val" }));
    if (it.mark !== undefined && it.mark !== null)
      root.appendChild(svg("rect", { x: (L + w * it.mark / max - 1).toFixed(1), y: yy, width: 3, height: 18, class: "mark" }));
    if (it.limit !== undefined && it.limit !== null)
      root.appendChild(svg("rect", { x: (L + w * it.limit / max - 1).toFixed(1), y: yy, width: 3, height: 18, class: "limit" }));
    root.appendChild(svgText(W - R + 6, yy + 13, fmt(it.value), { class: "tick" }));
  });
  return root;
}
