// The ruled console: a single page over the daemon's API. Hash routes
// (#/rules, #/runs, #/run/ID, #/pending, #/plugins); each view draws its
// frame once and fetches its data every two seconds, redrawing only what
// changed, so filters being typed and buttons being clicked stay put. No framework, no build step: what is here is what
// runs.
"use strict";

const $ = (sel, el = document) => el.querySelector(sel);
const main = () => $("#main");

function token() {
  const m = document.cookie.match(/(?:^|;\s*)ruled_token=([^;]*)/);
  return m ? decodeURIComponent(m[1]) : "";
}

async function api(path, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  const t = token();
  if (t) headers["Authorization"] = "Bearer " + t;
  const resp = await fetch(path, Object.assign({}, opts, { headers }));
  if (resp.status === 401) {
    location.href = "/login.html";
    throw new Error("the API needs a token");
  }
  const text = await resp.text();
  if (!resp.ok) throw new Error(text.trim() || resp.statusText);
  return text ? JSON.parse(text) : null;
}

// el builds an element: el("td", {class: "x"}, "text", child…).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "style") e.style.cssText = v; // CSSOM: allowed by the page's CSP, a style attribute is not
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function table(id, head, rows) {
  return el("table", { id },
    el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows));
}

const zeroTime = "0001-01-01T00:00:00Z";
function when(t) {
  if (!t || t === zeroTime) return "";
  const d = new Date(t);
  return isNaN(d) ? t : d.toLocaleString();
}

// shortID is enough of a run id to tell runs apart: its first digits are
// the start millisecond (runs started together share them), its last the
// random part; the whole id is the title.
function shortID(id) {
  return id.length > 16 ? id.slice(0, 8) + "…" + id.slice(-6) : id;
}

function runLink(id, text) {
  return el("a", { href: "#/run/" + id, title: id }, text || shortID(id));
}

// subMs is the part of an RFC 3339 time below the millisecond, in
// milliseconds: Date keeps milliseconds, the log keeps nanoseconds, and a
// step of 80µs must not read as 0µs.
function subMs(t) {
  const m = /\.(\d+)/.exec(t || "");
  return m ? (Number((m[1] + "000000000").slice(0, 9)) % 1e6) / 1e6 : 0;
}

function dur(ms) {
  if (ms < 1) return (ms * 1000).toFixed(ms < 0.01 ? 1 : 0) + "µs";
  if (ms < 1000) return ms.toFixed(ms < 10 ? 2 : 0) + "ms";
  const s = ms / 1000;
  if (s < 120) return s.toFixed(1) + "s";
  if (s < 7200) return (s / 60).toFixed(1) + "m";
  return (s / 3600).toFixed(1) + "h";
}

function span(started, ended) {
  if (!started || !ended || ended === zeroTime) return null;
  return (new Date(ended) - new Date(started)) + (subMs(ended) - subMs(started)); // ms, to the ns
}

// A command's outcome stays a few seconds; "updated" does not cover it.
let holdStatus = 0;

function setStatus(text, bad, hold) {
  if (!hold && Date.now() < holdStatus) return;
  if (hold) holdStatus = Date.now() + 6000;
  const s = $("#status");
  s.textContent = text;
  s.className = bad ? "bad" : "muted";
}

// ---- rules -------------------------------------------------------------

const commands = ["pause", "resume", "sleep", "kill", "reset"];

async function command(rule, cmd) {
  const body = {}; // the command is in the path; a sleep adds its length
  if (cmd === "sleep") {
    const f = prompt("Put " + rule + " to sleep for how long? (e.g. 10m, 2h)", "10m");
    if (!f) return;
    body.for = f;
  } else if (!confirm(cmd[0].toUpperCase() + cmd.slice(1) + " rule " + rule + "?")) {
    return;
  }
  try {
    await api("/v1/rules/" + encodeURIComponent(rule) + "/" + cmd, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    setStatus(cmd + " " + rule + ": done", false, true);
  } catch (e) {
    setStatus(cmd + " " + rule + ": " + e.message, true, true);
  }
  refresh();
}

const views = {};

views.rules = {
  frame() { return el("section", {}, el("h2", {}, "Rules"), el("div", { id: "body" })); },
  data() { return api("/v1/rules"); },
  render(rules) {
    const rows = rules.map((r) => {
      const s = r.stats || {};
      const last = (r.recent_errors || []).slice(-1)[0];
      return el("tr", { "data-rule": r.id },
        el("td", {}, el("a", { href: "#/runs?rule=" + encodeURIComponent(r.id) }, r.id)),
        el("td", { class: "state state-" + r.state }, r.state),
        el("td", {}, when(r.since)),
        el("td", {}, when(r.until)),
        el("td", { class: "num" }, s.Started), el("td", { class: "num" }, s.Completed),
        el("td", { class: "num" }, s.Failed), el("td", { class: "num" }, s.Errors),
        el("td", { class: "num" }, s.Active), el("td", { class: "num" }, s.Refused),
        el("td", { class: "num" }, r.held_steps),
        el("td", { class: "err" }, r.reason || (last ? last.error : "")),
        el("td", { class: "actions" }, commands.map((c) =>
          el("button", { "data-cmd": c, "data-rule": r.id, onclick: () => command(r.id, c) }, c))));
    });
    return table("rules-table", ["rule", "state", "since", "until", "started", "completed", "failed",
      "errors", "active", "refused", "held", "last error", ""], rows);
  },
};

// ---- runs --------------------------------------------------------------

function query() {
  const q = location.hash.split("?")[1] || "";
  return new URLSearchParams(q);
}

views.runs = {
  frame() {
    const q = query();
    const form = el("form", { id: "filters", onsubmit: (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      for (const k of ["rule", "outcome", "since"]) {
        const v = form.elements[k].value.trim();
        if (v) p.set(k, v);
      }
      location.hash = "#/runs" + (p.toString() ? "?" + p : "");
    } },
      el("label", {}, "rule ", el("input", { name: "rule", value: q.get("rule") || "", size: 18 })),
      el("label", {}, "outcome ", el("select", { name: "outcome" },
        ["", "ok", "failed", "cancelled", "dropped", "interrupted", "unlogged", "running"].map((o) =>
          el("option", { value: o, selected: o === (q.get("outcome") || "") }, o || "any")))),
      el("label", {}, "since ", el("input", { name: "since", value: q.get("since") || "", placeholder: "2h or a time", size: 14 })),
      el("button", { type: "submit" }, "filter"));
    return el("section", {}, el("h2", {}, "Runs"), form, el("div", { id: "body" }));
  },
  data() {
    const q = query();
    q.set("limit", "200");
    return api("/v1/runs?" + q);
  },
  render(runs) {
    const rows = runs.map((r) => el("tr", { "data-run": r.id, class: "outcome-" + r.outcome },
      el("td", {}, runLink(r.id)),
      el("td", {}, r.rule),
      el("td", {}, r.key || ""),
      el("td", { class: "outcome" }, r.outcome),
      el("td", {}, when(r.started)),
      el("td", { class: "num" }, span(r.started, r.ended) === null ? "" : dur(span(r.started, r.ended))),
      el("td", {}, r.topic),
      el("td", {}, r.parent ? runLink(r.parent) : ""),
      el("td", { class: "err" }, r.error || "")));
    if (!rows.length) return el("p", { class: "muted", id: "runs-table" }, "No runs match.");
    return table("runs-table", ["run", "rule", "key", "outcome", "started", "took", "trigger", "parent", "error"], rows);
  },
};

// ---- one run's tree ----------------------------------------------------

views.run = {
  frame(id) {
    return el("section", {}, el("h2", {}, "Run ", el("code", {}, id)), el("div", { id: "body" }));
  },
  data(id) { return api("/v1/runs/" + encodeURIComponent(id) + "/tree"); },
  render(rows) {
    // One time axis for the whole tree, sub-runs included.
    let t0 = Infinity, t1 = -Infinity;
    const now = Date.now();
    for (const r of rows) {
      const x = r.exec || r.node;
      if (!x) continue;
      const s = new Date(x.started).getTime();
      const e = x.ended && x.ended !== zeroTime ? new Date(x.ended).getTime() : now;
      if (!isNaN(s)) t0 = Math.min(t0, s);
      if (!isNaN(e)) t1 = Math.max(t1, e);
    }
    const total = Math.max(t1 - t0, 1);
    const bar = (x) => {
      const s = new Date(x.started).getTime();
      const e = x.ended && x.ended !== zeroTime ? new Date(x.ended).getTime() : now;
      const left = ((s - t0) / total) * 100, width = Math.max(((e - s) / total) * 100, 0.4);
      return el("div", { class: "track" }, el("div", { class: "bar", style: "margin-left:" + left.toFixed(2) + "%;width:" + width.toFixed(2) + "%" }));
    };
    const out = rows.map((r) => {
      const pad = { class: "indent", style: "padding-left:" + (r.depth * 1.4).toFixed(1) + "em" };
      if (r.missing) {
        return el("tr", { class: "missing" }, el("td", pad, "run " + r.missing.slice(0, 12) + " — not in the log"), el("td"), el("td"), el("td"), el("td"));
      }
      if (r.exec) {
        const x = r.exec;
        const name = r.depth > 0 ? runLink(x.id, "run " + shortID(x.id)) : "run " + shortID(x.id);
        return el("tr", { class: "exec outcome-" + x.outcome, "data-run": x.id },
          el("td", pad, name, " ", el("strong", {}, x.rule)),
          el("td", { class: "outcome" }, x.outcome),
          el("td", { class: "num" }, span(x.started, x.ended) === null ? "" : dur(span(x.started, x.ended))),
          el("td", { class: "timeline" }, bar(x)),
          el("td", { class: "err" }, x.error || ""));
      }
      const n = r.node;
      const failed = n.outcome === "failed" || r.interrupted;
      return el("tr", { class: "node outcome-" + n.outcome + (failed ? " failing" : ""), "data-kind": n.kind },
        el("td", pad, n.seq + " ", el("span", { class: "kind" }, n.kind), " ", n.name || "", n.do ? " " : "",
          n.do ? el("code", {}, n.do) : "", n.digest ? el("span", { class: "muted" }, " @" + n.digest.slice(0, 8)) : ""),
        el("td", { class: "outcome" }, r.interrupted ? "interrupted" : n.outcome),
        el("td", { class: "num" }, span(n.started, n.ended) === null ? "" : dur(span(n.started, n.ended))),
        el("td", { class: "timeline" }, bar(n)),
        el("td", { class: failed ? "err" : "detail" }, n.error || n.detail || "", nodeDetail(n)));
    });
    return table("tree", ["", "outcome", "took", "time (" + dur(total) + " in all)", "detail"], out);
  },
};

// nodeDetail is what a node worked on and did, folded: the trigger's
// event, what a condition saw, a step's input, output and effects, and
// who asked for a node an operator's command made.
function nodeDetail(n) {
  const parts = [];
  const show = (label, v) => {
    if (v === undefined || v === null || (Array.isArray(v) && !v.length)) return;
    parts.push(el("div", { class: "kv" }, el("span", { class: "muted" }, label + " "),
      el("pre", {}, typeof v === "string" ? v : JSON.stringify(v, null, 2))));
  };
  show(n.kind === "trigger" ? "event" : "input", n.input);
  show("saw", n.values);
  show("output", n.output);
  if (n.effects && n.effects.length) show("did", n.effects.join("\n"));
  show("by", n.by);
  if (!parts.length) return "";
  return el("details", { class: "node-detail" }, el("summary", {}, "details"), ...parts);
}

// ---- waiting steps -----------------------------------------------------

views.pending = {
  frame() { return el("section", {}, el("h2", {}, "Waiting steps"), el("div", { id: "body" })); },
  data() { return api("/v1/pending"); },
  render(recs) {
    if (!recs.length) return el("p", { class: "muted", id: "pending-table" }, "No step is waiting.");
    return table("pending-table", ["due", "rule", "step", "pass", "run", "fingerprint", "pinned module"], recs.map((p) =>
      el("tr", {}, el("td", {}, when(p.due)), el("td", {}, p.rule), el("td", {}, p.step), el("td", { class: "num" }, p.pass),
        el("td", {}, el("a", { href: "#/run/" + p.run }, p.run.slice(0, 12))),
        el("td", {}, el("code", {}, (p.fingerprint || "").slice(0, 12))), el("td", {}, el("code", {}, (p.digest || "").slice(0, 12))))));
  },
};

// ---- plugins -----------------------------------------------------------

views.plugins = {
  frame() { return el("section", {}, el("h2", {}, "Plugins"), el("div", { id: "body" })); },
  data() { return api("/v1/plugins"); },
  render(ps) {
    return table("plugins-table", ["plugin", "digest", "ABI", "functions", "granted", "reloads", "pinned (old versions kept for waiting steps)", "last error"],
      ps.map((p) => {
        const h = p.reloads || [];
        const failed = h.filter((e) => !e.ok).length;
        const last = h[h.length - 1];
        const pinned = Object.entries(p.pinned || {}).map(([d, by]) =>
          el("div", {}, el("code", {}, d.slice(0, 12)), " ", by.waiting_runs + " waiting, " + by.pending_records + " records"));
        return el("tr", { "data-plugin": p.name, class: p.loaded ? "" : "failing" },
          el("td", {}, p.name), el("td", {}, el("code", {}, (p.digest || "").slice(0, 12))), el("td", {}, p.abi || ""),
          el("td", {}, (p.functions || []).join(", ")), el("td", {}, (p.granted || []).join(", ")),
          el("td", {}, h.length + (failed ? " (" + failed + " failed)" : "") + (last ? ", last " + when(last.at) : "")),
          el("td", {}, pinned), el("td", { class: "err" }, p.last_error || ""));
      }));
  },
};

// ---- routing -----------------------------------------------------------

let current = null;
let shown = ""; // the data the page shows, as JSON: redrawn only when it changes

function route() {
  const h = location.hash.replace(/^#\/?/, "").split("?")[0];
  const [name, ...rest] = h.split("/");
  const view = views[name] ? name : "rules";
  return { view, arg: rest.join("/") };
}

async function refresh() {
  const r = current;
  if (!r) return;
  try {
    const data = await views[r.view].data(r.arg);
    if (current !== r) return; // the route changed meanwhile
    // Redraw only what changed: a table rebuilt every two seconds would
    // take the button under the operator's pointer away mid-click.
    const key = JSON.stringify(data);
    if (key !== shown) {
      shown = key;
      $("#body").replaceChildren(views[r.view].render(data, r.arg));
    }
    setStatus("updated " + new Date().toLocaleTimeString());
  } catch (e) {
    if (current === r) setStatus(e.message, true);
  }
}

function show() {
  current = route();
  shown = "";
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.dataset.view === current.view || (current.view === "run" && a.dataset.view === "runs"));
  }
  main().replaceChildren(views[current.view].frame(current.arg));
  refresh();
}

window.addEventListener("hashchange", show);
show();
setInterval(refresh, 2000);
