// The ruled console: a single page over the daemon's API. Hash routes:
// #/rules, #/rule/ID, #/runs, #/run/ID, #/pending, #/plugins, #/send.
// Each view draws its frame once (forms being typed into stay put) and
// its body whenever its data changes. It learns when to look again from
// GET /v1/changes, an NDJSON stream whose every line says "something the
// daemon reports changed"; without the stream (a proxy that buffers it,
// an old daemon) it polls. No framework, no build step: what is here is
// what runs (RATIONALE: "The console stays hand-written").
"use strict";

const $ = (sel, el = document) => el.querySelector(sel);
const main = () => $("#main");
const enc = encodeURIComponent;

function token() {
  const m = document.cookie.match(/(?:^|;\s*)ruled_token=([^;]*)/);
  return m ? decodeURIComponent(m[1]) : "";
}

function authHeaders(extra) {
  const headers = Object.assign({}, extra || {});
  const t = token();
  if (t) headers["Authorization"] = "Bearer " + t;
  return headers;
}

async function api(path, opts = {}) {
  const resp = await fetch(path, Object.assign({}, opts, { headers: authHeaders(opts.headers) }));
  if (resp.status === 401) {
    toLogin();
    throw new Error("the API needs a token");
  }
  const text = await resp.text();
  if (!resp.ok) throw new Error(text.trim() || resp.statusText);
  return text ? JSON.parse(text) : null;
}

// toLogin sends the browser to the login page, saying when the token it
// had was refused.
function toLogin() {
  location.href = "/login.html" + (token() ? "?why=refused" : "");
}

// post sends a command: JSON only, which no other site's form can send.
function post(path, body) {
  return api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}) });
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
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === "") continue;
    e.append(c instanceof Node ? c : document.createTextNode(visible(String(c))));
  }
  return e;
}

// visible shows the characters that reorder text (right-to-left
// overrides and isolates) as their code points: a rule's description or a
// step's output must not make "evil" read as "live".
function visible(s) {
  return /[\u202a-\u202e\u2066-\u2069\u200e\u200f]/.test(s)
    ? s.replace(/[\u202a-\u202e\u2066-\u2069\u200e\u200f]/g, (c) => "⟨U+" + c.charCodeAt(0).toString(16).toUpperCase() + "⟩")
    : s;
}

// clip shortens a value a table or a summary shows (a key, a topic) to n
// characters; the whole is in the details pane and the API.
function clip(s, n = 80) {
  s = s == null ? "" : String(s);
  return s.length > n ? s.slice(0, n) + "… (" + s.length + " characters)" : s;
}

// table is a table in a box that scrolls sideways on a narrow screen, so
// that the page itself never does. A "stack" table's rows become cards
// there instead, each cell labelled with its column (data-label).
function table(id, head, rows, cls) {
  for (const tr of rows) {
    [...tr.children].forEach((td, i) => { if (head[i]) td.dataset.label = head[i]; });
  }
  return el("div", { class: "scroll" }, el("table", { id, class: cls },
    el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows)));
}

function section(title, ...body) {
  return el("section", { class: "part" }, el("h3", {}, title), ...body);
}

const zeroTime = "0001-01-01T00:00:00Z";
function when(t) {
  if (!t || t === zeroTime) return "";
  const d = new Date(t);
  return isNaN(d) ? t : d.toLocaleString();
}

// ago is how long before now t was, for lists where the order matters
// more than the date.
function ago(t) {
  if (!t || t === zeroTime) return "";
  const ms = Date.now() - new Date(t).getTime();
  if (isNaN(ms)) return t;
  return ms < 0 ? "in " + dur(-ms) : dur(ms) + " ago";
}

// shortID is enough of a run id to tell runs apart: its first twelve
// digits are the start millisecond, of which the first four change only
// every 65 s; digits 5-12 (the millisecond) and the last six (random)
// tell apart runs started together. The whole id is the title.
function shortID(id) {
  return id && id.length > 16 ? id.slice(4, 12) + "…" + id.slice(-6) : id || "";
}

function runLink(id, text) {
  return el("a", { href: "#/run/" + id, title: id, class: "run-id" }, text || shortID(id));
}

function ruleLink(id) {
  return el("a", { href: "#/rule/" + enc(id), class: "rule-id" }, id);
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
  if (s < 172800) return (s / 3600).toFixed(1) + "h";
  return (s / 86400).toFixed(1) + "d";
}

// span is how long from started to ended, in ms to the nanosecond; null
// while it has not ended.
function span(started, ended) {
  if (!started || !ended || ended === zeroTime) return null;
  return (new Date(ended) - new Date(started)) + (subMs(ended) - subMs(started));
}

function took(x) {
  const s = span(x.started, x.ended);
  return s === null ? "" : dur(s);
}

function pretty(v) {
  return typeof v === "string" ? v : JSON.stringify(v, null, 2);
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

// ---- rule commands -----------------------------------------------------

const commands = ["pause", "resume", "sleep", "kill", "reset"];

// commandAsk is what a command's confirmation says it does.
const commandAsk = {
  pause: (r) => "Pause rule " + r + "? Its triggers are held or dropped (its on-pause) until it is resumed.",
  kill: (r) => "Kill rule " + r + "? Its live runs end and it takes no trigger until it is reset.",
  reset: (r) => "Reset rule " + r + "? It becomes runnable again, its error budget cleared.",
};

// eventName is a state machine event as the page's buttons name it.
// scopes are what the page's token may do (GET /v1/whoami): the page
// hides what it may not, rather than offer a button that gets 403. null
// until known, and for a daemon that does not say: everything.
let scopes = null;
function can(scope) {
  return !scopes || scopes.includes(scope);
}

// noScope says why something is not offered.
function noScope(what, scope) {
  return el("p", { class: "muted no-scope", "data-scope": scope }, "This token may not " + what + ": it needs the " + scope + " scope.");
}

function eventName(e) {
  return e === "run" ? "resume" : e;
}

async function command(rule, cmd) {
  const body = {}; // the command is in the path; a sleep adds its length
  if (cmd === "sleep") {
    const f = prompt("Put " + rule + " to sleep for how long? (e.g. 10m, 2h)", "10m");
    if (!f) return;
    body.for = f;
  } else if (!confirm(commandAsk[cmd] ? commandAsk[cmd](rule) : cmd[0].toUpperCase() + cmd.slice(1) + " rule " + rule + "?")) {
    return;
  }
  try {
    await post("/v1/rules/" + enc(rule) + "/" + cmd, body);
    setStatus(cmd + " " + rule + ": done", false, true);
  } catch (e) {
    setStatus(cmd + " " + rule + ": " + e.message, true, true);
  }
  refresh();
}

function commandButtons(rule) {
  if (!can("control")) return null;
  return el("span", { class: "actions" }, commands.map((c) =>
    el("button", { type: "button", "data-cmd": c, "data-rule": rule, onclick: () => command(rule, c) }, c)));
}

// ---- run commands ------------------------------------------------------

const runCommandText = {
  cancel: ["Cancel run ", "cancelled"],
  rerun: ["Run again, with the same trigger, run ", "started again"],
  now: ["Run the waiting step of run ", "runs now"],
  drop: ["Drop the waiting step of run ", "dropped"],
};

async function runCommand(id, cmd) {
  const [ask, done] = runCommandText[cmd];
  if (!confirm(ask + shortID(id) + "?")) return;
  try {
    const res = await post("/v1/runs/" + enc(id) + "/" + cmd);
    setStatus("run " + shortID(id) + ": " + ((res && res.said) || done) + (res && res.by ? " (by " + res.by + ")" : ""), false, true);
    if (res && res.new_run) {
      location.hash = "#/run/" + res.new_run;
      return;
    }
  } catch (e) {
    setStatus("run " + shortID(id) + ": " + e.message, true, true);
  }
  refresh();
}

function runButtons(id, cmds) {
  if (!can("control")) return [];
  return cmds.map((c) => el("button", { type: "button", "data-run-cmd": c, onclick: () => runCommand(id, c) },
    { cancel: "cancel", rerun: "run again", now: "run now", drop: "drop" }[c]));
}

const views = {};

// ---- rules -------------------------------------------------------------

// invalidRules lists the rule files that did not load, with their errors:
// a typo in a file must be seen, not found in a log.
function invalidRules(problems) {
  if (!problems || !problems.length) return null;
  const files = new Set(problems.map((p) => p.at.replace(/(:\d+)+$/, "")));
  const n = problems.length, f = files.size;
  return el("div", { class: "problems", id: "invalid-rules" },
    el("h3", {}, (n === 1 ? "1 problem" : n + " problems") + " in " + (f === 1 ? "1 rule file" : f + " rule files") +
      ": what they define is not loaded (a rule that loaded before keeps serving)"),
    el("ul", {}, problems.map((p) => el("li", {},
      el("code", {}, p.at), p.rule ? [" ", el("strong", {}, p.rule)] : "", ": ",
      el("span", { class: "err" }, p.error), p.hint ? el("div", { class: "muted" }, "hint: " + p.hint) : ""))));
}

views.rules = {
  frame() { return el("section", {}, el("h2", {}, "Rules"), el("div", { id: "body" })); },
  async data() {
    const [st, h] = await Promise.all([api("/v1/status"), chartsData("only=rules&ring=hour")]);
    return { rules: st.rules || [], invalid: st.invalid_rules || [], h };
  },
  render({ rules, invalid, h }) {
    const rows = rules.map((r) => {
      const s = r.stats || {};
      const last = (r.recent_errors || []).slice(-1)[0];
      return el("tr", { "data-rule": r.id },
        el("td", {}, ruleLink(r.id)),
        el("td", { class: "state state-" + r.state }, r.state),
        el("td", { title: when(r.since) }, ago(r.since)),
        el("td", { class: "num" }, s.started), el("td", { class: "num" }, s.completed),
        el("td", { class: "num" }, s.failed), el("td", { class: "num" }, s.cancelled), el("td", { class: "num" }, s.dropped),
        el("td", { class: "num" }, s.suppressed), el("td", { class: "num" }, s.refused),
        el("td", { class: "num" }, s.active),
        el("td", {}, sparkline(h, r.id)),
        el("td", { class: "err" }, r.reason || (last ? last.error : "")),
        el("td", {}, commandButtons(r.id)));
    });
    const queue = h ? [{ name: "queued", points: h.hour.queued, cls: "queued" }] : null;
    return el("div", {}, invalidRules(invalid),
      rows.length ? table("rules-table", ["rule", "state", "since", "started", "completed", "failed", "cancelled", "dropped",
        "suppressed", "refused", "active", "last hour", "last error", ""], rows, "stack") : el("p", { class: "muted" }, "No rule is loaded."),
      queue ? section("The queue", el("figure", { id: "queue-chart", "data-chart": "queue" },
        el("figcaption", {}, "Triggers and steps waiting for a worker, each minute of the last hour"),
        lines(queue, 480, 90, true, h.hour.step_ns), legend(queue, true))) : null);
  },
};

// ---- charts ------------------------------------------------------------

// The charts are drawn here as SVG from GET /v1/history: each point one
// step (a minute for the hour, a quarter hour for the day), null where the
// daemon counted nothing (it was down). A few polylines need no library.

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, v);
  for (const c of children.flat(Infinity)) if (c) e.append(c);
  return e;
}

// chartsData is the charts' points a page draws (query: one rule, one
// kind, one ring), or null when the daemon keeps none.
function chartsData(query) {
  return api("/v1/history?" + query).catch(() => null);
}

// lines draws series ([{name, points, cls}]) in a w×h box, one scale for
// all, gaps where a point is null; labels adds the scale and the times.
function lines(series, w, h, labels, step) {
  const all = series.flatMap((s) => s.points || []).filter((v) => v !== null);
  const top = Math.max(1, ...all);
  const n = Math.max(...series.map((s) => (s.points || []).length), 2);
  const pad = labels ? 18 : 1;
  const x = (i) => pad + (i * (w - pad - 2)) / (n - 1);
  const y = (v) => 2 + (h - 4 - (labels ? 12 : 0)) * (1 - v / top);
  const paths = series.map((s) => {
    const segs = [];
    let cur = [];
    (s.points || []).forEach((v, i) => {
      if (v === null) { if (cur.length) segs.push(cur); cur = []; return; }
      cur.push(x(i).toFixed(1) + "," + y(v).toFixed(1));
    });
    if (cur.length) segs.push(cur);
    return segs.map((pts) => pts.length === 1
      ? svg("circle", { cx: pts[0].split(",")[0], cy: pts[0].split(",")[1], r: 1.5, class: "dot " + s.cls })
      : svg("polyline", { points: pts.join(" "), class: "line " + s.cls }));
  });
  const out = svg("svg", { width: w, height: h, viewBox: "0 0 " + w + " " + h, class: "chart", role: "img",
    "aria-label": series.map((s) => s.name).join(", ") },
  svg("line", { x1: pad, y1: y(0), x2: w - 1, y2: y(0), class: "axis" }), paths);
  if (labels) {
    const t = (s) => svg("text", s.attrs, s.text);
    out.append(t({ attrs: { x: 0, y: 10, class: "scale" }, text: fmtNum(top) }),
      t({ attrs: { x: pad, y: h - 1, class: "scale" }, text: "−" + stepsSpan(n - 1, step) }),
      t({ attrs: { x: w - 1, y: h - 1, class: "scale end" }, text: "now" }));
  }
  return out;
}

function fmtNum(v) {
  return v >= 1000 ? (v / 1000).toFixed(1) + "k" : v >= 10 ? Math.round(v) : +v.toFixed(2);
}

// stepsSpan is n steps of step nanoseconds as words.
function stepsSpan(n, step) {
  const m = (n * step) / 6e10;
  return m >= 120 ? Math.round(m / 60) + " h" : m >= 1 ? Math.round(m) + " min" : Math.round(m * 60) + " s";
}

function sum(points) {
  return (points || []).reduce((a, v) => a + (v || 0), 0);
}

// legend names each series with its total (or its last value).
function legend(series, last) {
  return el("div", { class: "legend" }, series.map((s) => el("span", { class: "key " + s.cls },
    s.name + " " + (last ? fmtNum(((s.points || []).filter((v) => v !== null).slice(-1)[0]) || 0) : sum(s.points)))));
}

// ruleSeries are a rule's lines in a ring of the history.
function ruleSeries(ring, id) {
  const r = ring && ring.rules && ring.rules[id];
  if (!r) return null;
  return [
    { name: "started", points: r.started, cls: "started" },
    { name: "failed", points: r.failed, cls: "failed" },
    { name: "turned away", points: r.turned_away, cls: "away" },
    { name: "errors", points: r.errors, cls: "errors" },
  ];
}

// activity is a rule's charts: its last hour and its last day.
function activity(h, id) {
  if (!h) return el("p", { class: "muted" }, "This daemon keeps no charts.");
  const hour = ruleSeries(h.hour, id), day = ruleSeries(h.day, id);
  if (!hour) return el("p", { class: "muted" }, "Nothing counted yet: a point is taken every minute.");
  return el("div", { class: "charts", id: "rule-charts" },
    el("figure", { "data-chart": "hour" }, el("figcaption", {}, "Last hour, a minute a point"), lines(hour, 480, 110, true, h.hour.step_ns), legend(hour)),
    el("figure", { "data-chart": "day" }, el("figcaption", {}, "Last day, a quarter hour a point"), lines(day || [], 480, 110, true, h.day.step_ns), legend(day || [])));
}

// sparkline is a rule's last hour in a table cell: runs started, and
// failed over them.
function sparkline(h, id) {
  const s = ruleSeries(h && h.hour, id);
  if (!s) return "";
  return el("span", { class: "spark", title: "last hour: " + sum(s[0].points) + " started, " + sum(s[1].points) + " failed, " + sum(s[2].points) + " turned away" },
    lines(s.slice(0, 3), 120, 22, false));
}

// ---- one rule ----------------------------------------------------------

// counters are a rule's counters as the page names them, with what each
// means on hover.
const counters = [
  ["started", "started", "runs started (replayed ones included)"],
  ["completed", "completed", "runs that finished every step"],
  ["failed", "failed", "runs that ended on a failed step"],
  ["cancelled", "cancelled", "runs ended by a cancel-on event or an operator"],
  ["dropped", "dropped", "runs whose waiting step was dropped"],
  ["suppressed", "suppressed", "triggers turned away by cooldown, mode single or max (why not says which)"],
  ["refused", "refused", "triggers refused: paused, over max, queue or throttle full"],
  ["debounced", "debounced", "triggers a later one of their key replaced"],
  ["errors", "errors", "errors counted against the rule's budget"],
  ["active", "active", "runs live now"],
  ["throttled", "throttled", "triggers waiting for the throttle"],
  ["held_triggers", "held triggers", "triggers held while the rule is paused or asleep"],
];

views.rule = {
  frame(id) {
    return el("section", {},
      el("h2", {}, "Rule ", el("code", {}, id)),
      el("div", { id: "body" }),
      section("Send a test event", eventForm("rule-event")));
  },
  async data(id) {
    const [rule, why, runs, h] = await Promise.all([
      api("/v1/rules/" + enc(id)),
      api("/v1/rules/" + enc(id) + "/why").catch((e) => ({ error: e.message })),
      api("/v1/runs?limit=20&rule=" + enc(id)).catch((e) => ({ error: e.message })),
      chartsData("rule=" + enc(id)),
    ]);
    return { rule, why, runs, h };
  },
  render({ rule: r, why, runs, h }) {
    const s = r.stats || {};
    const started = daemonStarted;
    fillEvent("rule-event", r);
    const head = el("div", { class: "rule-head" },
      el("span", { class: "state state-" + r.state, id: "rule-state" }, r.state),
      el("span", { class: "muted", title: when(r.since) }, " since " + ago(r.since)),
      r.until ? el("span", { class: "muted" }, " until " + when(r.until)) : "",
      r.reason ? el("span", { class: "err" }, " — " + r.reason) : "",
      " ", commandButtons(r.id));
    const about = el("div", { class: "about" },
      r.description ? el("p", { id: "rule-description" }, r.description) : el("p", { class: "muted" }, "No description."),
      el("p", { class: "muted" }, "Defined at ", el("code", {}, r.at),
        r.on && r.on.length ? [" · on ", r.on.map((t, i) => [i ? ", " : "", el("code", {}, t)])] : "",
        (r.schedules || []).map((sc) => [" · ", el("code", {}, sc.schedule), sc.next ? " next " + when(sc.next) : ""])));
    const grid = el("dl", { class: "counters", id: "rule-counters", title: "since the daemon started" }, counters.map(([k, label, help]) =>
      el("div", { class: "counter" + ((k === "failed" || k === "errors") && s[k] ? " bad" : ""), title: help, "data-counter": label },
        el("dt", {}, label), el("dd", {}, s[k] || 0))),
      el("div", { class: "counter", title: "steps that came due while the rule was paused or asleep", "data-counter": "held steps" },
        el("dt", {}, "held steps"), el("dd", {}, r.held_steps || 0)));
    const errors = (r.recent_errors || []).length ? section("Recent errors",
      el("ul", { class: "errors" }, r.recent_errors.slice().reverse().map((e) =>
        el("li", {}, el("span", { class: "muted" }, when(e.timestamp) + " "), el("span", { class: "err" }, e.error))))) : null;
    return el("div", {}, head, about, el("p", { class: "muted small" }, "Counters since the daemon started" + (started ? " (" + when(started) + ")" : "") + "."), grid, errors,
      section("Activity", activity(h, r.id)),
      section("Runs", runsPart(r.id, runs)),
      section("Why not", whyNotPart(why)),
      r.states && r.states.length ? section("States it reads", statesPart(r.states)) : null,
      section("State history", historyPart(r.history)),
      section("Definition", el("pre", { class: "source", id: "rule-source" }, r.source || "(not available)")));
  },
};

function runsPart(rule, runs) {
  if (runs.error) return el("p", { class: "muted" }, "The execution log is not available: " + runs.error);
  if (!runs.length) return el("p", { class: "muted", id: "runs-table" }, "No runs yet.");
  return el("div", {}, runsTable(runs, true),
    el("p", {}, el("a", { href: "#/runs?rule=" + enc(rule) }, "all runs of " + rule + " →")));
}

function whyNotPart(why) {
  if (why.error) return el("p", { class: "muted" }, why.error);
  if (!why.length) return el("p", { class: "muted", id: "why-not" }, "Every trigger so far started a run.");
  return el("div", { id: "why-not" }, why.map((w) => el("div", { class: "why", "data-reason": w.reason },
    el("h4", {}, w.reason, el("span", { class: "muted" }, " — " + w.count + (w.count === 1 ? " trigger" : " triggers"))),
    table(null, ["when", "key", "topic", "saw"], (w.last || []).map((n) =>
      el("tr", {}, el("td", { title: when(n.at) }, ago(n.at)), el("td", {}, clip(n.key, 40)), el("td", {}, clip(n.topic, 60)),
        el("td", {}, n.values ? el("pre", { class: "saw" }, pretty(n.values)) : "",
          n.event ? el("details", {}, el("summary", {}, "event"), el("pre", {}, pretty(n.event))) : ""))), "stack"))));
}

// statesPart lists the entities' states a rule reads (states:) and what
// each holds now: one whose id the trigger fills says so; a stale one is
// what the rule sees as missing.
function statesPart(states) {
  return table("rule-states", ["name", "entity", "state", "last seen"], states.map((s) =>
    el("tr", { "data-state": s.name },
      el("td", {}, el("code", {}, "states." + s.name)),
      el("td", {}, el("code", {}, clip(s.entity, 80)), s.max_age ? el("span", { class: "muted" }, " max-age " + s.max_age) : ""),
      el("td", {}, s.entity.includes("{{") ? el("span", { class: "muted" }, "filled from each trigger")
        : s.state ? el("pre", { class: "saw" }, pretty(s.state)) : el("span", { class: "muted" }, "none: the rule reads it as nil")),
      el("td", { title: s.last_seen ? when(s.last_seen) : "" }, s.last_seen ? ago(s.last_seen) : "",
        s.stale ? el("span", { class: "err" }, " stale: read as nil") : ""))), "stack");
}

function historyPart(hops) {
  if (!hops || !hops.length) return el("p", { class: "muted", id: "history" }, "No change of state since the daemon started.");
  return table("history", ["when", "event", "from", "to", "by"], hops.slice().reverse().map((h) =>
    el("tr", {}, el("td", { title: when(h.time) }, when(h.time)), el("td", {}, eventName(h.event)),
      el("td", { class: "state state-" + h.from }, h.from), el("td", { class: "state state-" + h.to }, h.to),
      el("td", {}, h.by || ""))), "stack");
}

// ---- test events -------------------------------------------------------

// eventForm sends one event to the daemon (POST /v1/events) and shows
// the runs it started, found by the id the form gives it.
function eventForm(id) {
  if (!can("events")) return noScope("send events", "events");
  const out = el("div", { class: "send-result", id: id + "-result" });
  const area = el("textarea", { name: "event", rows: 6, spellcheck: "false", id: id + "-json",
    placeholder: '{"topic": "scooter.telemetry", "vehicle": "s-1", "battery": 12}' });
  const form = el("form", { class: "send", id, onsubmit: async (ev) => {
    ev.preventDefault();
    let e;
    try {
      e = JSON.parse(area.value);
    } catch (err) {
      out.replaceChildren(el("p", { class: "err" }, "Not JSON: " + err.message));
      return;
    }
    if (!e || typeof e !== "object" || Array.isArray(e) || typeof e.topic !== "string") {
      out.replaceChildren(el("p", { class: "err" }, 'An event is a JSON object with a "topic".'));
      return;
    }
    if (e.id === undefined) e.id = "console-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 8);
    out.replaceChildren(el("p", { class: "muted" }, "sending…"));
    let res, status;
    try {
      const resp = await fetch("/v1/events", { method: "POST", headers: authHeaders({ "Content-Type": "application/json" }), body: JSON.stringify(e) });
      status = resp.status;
      res = await resp.json().catch(() => ({}));
    } catch (err) {
      out.replaceChildren(el("p", { class: "err" }, err.message));
      return;
    }
    if (status !== 202) {
      const why = (res.rejected || []).map((r) => r.reason + (r.detail ? ": " + r.detail : "")).concat(res.error ? [res.error] : []).join("; ");
      out.replaceChildren(el("p", { class: "err" }, "Refused (" + status + "): " + (why || "no reason given")));
      return;
    }
    out.replaceChildren(el("p", { class: "ok" }, "Accepted as ", el("code", {}, e.id), "."), el("div", { class: "started" }));
    startedBy(e.id, $(".started", out), 0);
  } },
  area, el("div", {}, el("button", { type: "submit" }, "send")), out);
  return form;
}

// startedBy lists the runs event id started, looking again a few times:
// its runs start once a worker has asked the rules' conditions.
async function startedBy(id, box, tries) {
  let runs = [];
  try {
    runs = (await api("/v1/runs?since=10m&limit=200")).filter((r) => r.event_id === id);
  } catch (e) {
    box.replaceChildren(el("p", { class: "muted" }, "Runs are not listed: " + e.message));
    return;
  }
  if (runs.length) {
    box.replaceChildren(el("p", {}, runs.length === 1 ? "It started a run:" : "It started " + runs.length + " runs:"),
      el("ul", {}, runs.map((r) => el("li", { "data-rule": r.rule }, runLink(r.id), " ", r.rule, " ",
        el("span", { class: "outcome outcome-" + r.outcome }, r.outcome)))));
  }
  if (tries < 4) { // a rule whose condition runs longer starts its run later
    setTimeout(() => startedBy(id, box, tries + 1), 400 * (tries + 1));
    return;
  }
  if (!runs.length) box.replaceChildren(el("p", { class: "muted" }, "It started no run. A rule's page says why not."));
}

// fillEvent puts an example event for rule r in the form, once: its
// first topic without wildcards, and its key.
function fillEvent(id, r) {
  const area = document.getElementById(id + "-json");
  if (!area || area.value || area.dataset.filled) return;
  area.dataset.filled = "1";
  const topic = (r.on || []).find((t) => !/[*>]/.test(t)) || (r.on || [""])[0].replace(/[*>]/g, "x");
  const e = { topic };
  if (r.source) {
    const k = /^\s*key:\s*([\w.-]+)\s*$/m.exec(r.source);
    if (k && !k[1].includes(".")) e[k[1]] = "test";
  }
  area.value = JSON.stringify(e, null, 2);
}

views.send = {
  frame() {
    return el("section", {}, el("h2", {}, "Send a test event"),
      el("p", { class: "muted" }, "The event goes in as a client's would (POST /v1/events): every rule it triggers sees it."),
      eventForm("send-event"));
  },
  data() { return Promise.resolve(null); },
  render() { return el("div"); },
};

// ---- runs --------------------------------------------------------------

function query() {
  const q = location.hash.split("?")[1] || "";
  return new URLSearchParams(q);
}

function runsTable(runs, short) {
  const rows = runs.map((r) => el("tr", { "data-run": r.id, class: "outcome-" + r.outcome },
    el("td", {}, runLink(r.id)),
    short ? null : el("td", {}, ruleLink(r.rule)),
    el("td", { title: r.key && r.key.length > 40 ? clip(r.key, 400) : null }, clip(r.key, 40)),
    el("td", { class: "outcome" }, r.outcome),
    el("td", { title: when(r.started) }, ago(r.started)),
    el("td", { class: "num" }, took(r)),
    el("td", {}, clip(r.topic, 60)),
    short ? null : el("td", {}, r.parent ? runLink(r.parent) : ""),
    el("td", { class: "err" }, r.error || "")));
  const head = short ? ["run", "key", "outcome", "started", "took", "trigger", "error"]
    : ["run", "rule", "key", "outcome", "started", "took", "trigger", "parent", "error"];
  return table("runs-table", head, rows, "stack");
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
    if (!runs.length) return el("p", { class: "muted", id: "runs-table" }, "No runs match.");
    return runsTable(runs, false);
  },
};

// ---- one run: its tree, a timeline, a node's details ----------------------

// selected is the node whose details the run page shows: "run:seq" (or
// "run" for a run's own row), kept across redraws and in the address.
let selected = "";

views.run = {
  frame(id) {
    selected = query().get("node") || "";
    return el("section", {}, el("h2", {}, "Run ", el("code", { class: "run-full-id" }, id)), el("div", { id: "body" }));
  },
  data(id) { return api("/v1/runs/" + enc(id.split("?")[0]) + "/tree"); },
  render(rows) {
    ownRuns(rows);
    const root = (rows.find((r) => r.exec && r.depth === 0) || {}).exec;
    if (!selected && rows.length) {
      // A failed run opens on what failed; any other on its trigger.
      const failing = rows.find((r) => r.node && (r.node.outcome === "failed" || r.interrupted));
      selected = rowKey(failing || rows.find((r) => r.node && r.node.kind === "trigger") || rows[0]);
    }
    const body = el("div", { class: "run-page" },
      root ? runSummary(root, rows) : null,
      el("div", { class: "run-split" },
        el("div", { class: "run-tree" }, treeTable(rows)),
        el("aside", { id: "pane", class: "pane" }, paneFor(rows))));
    return body;
  },
};

// ownRuns notes on each node row the run it belongs to (the log keeps
// it in the key, not the node): the run row above it, one level up.
function ownRuns(rows) {
  const at = [];
  for (const r of rows) {
    if (r.exec) at[r.depth] = r.exec.id;
    if (r.node) r.run = at[r.depth - 1] || "";
  }
}

function rowKey(r) {
  if (!r) return "";
  if (r.exec) return r.exec.id;
  if (r.node) return r.run + ":" + r.node.seq;
  return "";
}

// waitingNode is the open delay or wait node of the run's own steps.
function waitingNode(rows, id) {
  const r = rows.find((x) => x.node && x.run === id && (x.node.kind === "delay" || x.node.kind === "wait") &&
    (x.node.outcome === "open" || x.node.outcome === "held") && !x.interrupted);
  return r && r.node;
}

function runSummary(x, rows) {
  const open = x.outcome === "running";
  const cmds = open ? (waitingNode(rows, x.id) ? ["now", "drop", "cancel"] : ["cancel"]) : ["rerun"];
  return el("div", { class: "run-summary outcome-" + x.outcome },
    el("dl", { class: "facts" },
      fact("rule", ruleLink(x.rule)), fact("outcome", el("span", { class: "outcome" }, x.outcome)),
      x.key ? fact("key", el("code", { title: x.key.length > 80 ? "the whole key is in the run's details" : null }, clip(x.key))) : null,
      fact("trigger", el("code", {}, clip(x.topic)), x.event_id ? el("span", { class: "muted" }, " id " + clip(x.event_id, 40)) : ""),
      fact("started", when(x.started)), fact("took", took(x) || (open ? el("span", { "data-running-since": x.started }, "running for " + dur(Date.now() - new Date(x.started))) : "")),
      x.parent ? fact("fired by", runLink(x.parent)) : null),
    x.error ? el("pre", { class: "err run-error" }, x.error) : null,
    el("div", { class: "actions run-actions" }, runButtons(x.id, cmds)));
}

function fact(k, ...v) {
  return el("div", {}, el("dt", {}, k), el("dd", {}, ...v));
}

function treeTable(rows) {
  // One time axis for the whole tree, sub-runs included; sub-millisecond
  // spans keep their digits (subMs).
  let t0 = Infinity, t1 = -Infinity;
  const now = Date.now();
  const ms = (t) => new Date(t).getTime() + subMs(t);
  for (const r of rows) {
    const x = r.exec || r.node;
    if (!x) continue;
    const s = ms(x.started);
    const e = x.ended && x.ended !== zeroTime ? ms(x.ended) : now;
    if (!isNaN(s)) t0 = Math.min(t0, s);
    if (!isNaN(e)) t1 = Math.max(t1, e);
  }
  const total = Math.max(t1 - t0, 0.001);
  const bar = (x) => {
    const s = ms(x.started);
    const e = x.ended && x.ended !== zeroTime ? ms(x.ended) : now;
    const left = ((s - t0) / total) * 100, width = Math.max(((e - s) / total) * 100, 0.4);
    return el("div", { class: "track" }, el("div", { class: "bar", style: "margin-left:" + Math.min(left, 99.6).toFixed(2) + "%;width:" + width.toFixed(2) + "%" }));
  };
  const out = rows.map((r) => {
    const pad = { class: "indent", style: "padding-left:" + (r.depth * 1.2 + 0.4).toFixed(1) + "em" };
    if (r.missing) {
      return el("tr", { class: "missing" }, el("td", pad, "run " + shortID(r.missing) + " never started: its rule turned the trigger away (paused, asleep, its condition said no, its mode or max) — its page's “why not” says which"), el("td"), el("td"), el("td"));
    }
    const key = rowKey(r);
    const pick = () => select(key);
    if (r.exec) {
      const x = r.exec;
      const name = r.depth > 0 ? runLink(x.id, "run " + shortID(x.id)) : "run " + shortID(x.id);
      return el("tr", { class: "exec outcome-" + x.outcome + (key === selected ? " selected" : ""), "data-run": x.id, "data-key": key, onclick: pick },
        el("td", pad, name, " ", el("strong", {}, x.rule), x.key ? el("span", { class: "muted" }, " " + clip(x.key, 40)) : ""),
        el("td", { class: "outcome" }, x.outcome),
        el("td", { class: "num" }, took(x)),
        el("td", { class: "timeline" }, bar(x)));
    }
    const n = r.node;
    const failed = n.outcome === "failed" || r.interrupted;
    return el("tr", { class: "node outcome-" + n.outcome + (failed ? " failing" : "") + (key === selected ? " selected" : ""),
      "data-kind": n.kind, "data-key": key, onclick: pick, tabindex: "0", onkeydown: (ev) => { if (ev.key === "Enter") pick(); } },
      el("td", pad, el("span", { class: "kind" }, n.kind), " ", n.name || "", n.do ? [" ", el("code", {}, n.do)] : "",
        n.by ? el("span", { class: "by" }, " by " + n.by) : ""),
      el("td", { class: "outcome" }, r.interrupted ? "interrupted" : n.outcome),
      el("td", { class: "num" }, instant(n) ? "" : took(n)),
      el("td", { class: "timeline" }, bar(n)));
  });
  return table("tree", ["", "outcome", "took", "time (" + dur(total) + " in all)"], out);
}

// instant: a node that marks a moment (the trigger, a replay), whose
// span says nothing.
function instant(n) {
  return (n.kind === "trigger" || n.kind === "replay") && span(n.started, n.ended) === 0;
}

// precise is a time as the log keeps it, to the microsecond, beside the
// browser's own way of writing it.
function precise(t) {
  if (!t || t === zeroTime) return "";
  const m = /T(\d\d:\d\d:\d\d)(\.\d{1,6})?\d*(Z|[+-]\d\d:\d\d)?/.exec(t);
  return when(t) + (m ? "  (" + m[1] + (m[2] || "") + (m[3] === "Z" ? " UTC" : m[3] || "") + ")" : "");
}

// dueOf is when an open delay node's step comes due: its start plus the
// after its detail names (Go's duration syntax: 1h2m3.5s, 250ms).
function dueOf(n) {
  const m = /^(?:after|retry: .* in) ((?:\d+(?:\.\d+)?(?:h|ms|m|s|µs|us|ns))+)/.exec(n.detail || "");
  if (!m) return null;
  const unit = { h: 3600e3, m: 60e3, s: 1e3, ms: 1, "µs": 1e-3, us: 1e-3, ns: 1e-6 };
  let ms = 0;
  for (const [, v, u] of m[1].matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|µs|us|ns)/g)) ms += Number(v) * unit[u];
  const due = new Date(new Date(n.started).getTime() + ms);
  return when(due.toISOString()) + " (" + ago(due.toISOString()) + ")";
}

// rowsShown are the run page's rows, for the pane to be drawn again when
// another node is picked without fetching them again.
let rowsShown = [];

function select(key) {
  selected = key;
  const narrow = window.matchMedia("(max-width: 760px)").matches;
  for (const tr of document.querySelectorAll("#tree tr[data-key]")) tr.classList.toggle("selected", tr.dataset.key === key);
  const pane = $("#pane");
  if (pane) {
    pane.replaceChildren(...paneFor(rowsShown).childNodes);
    if (narrow) pane.scrollIntoView({ behavior: "smooth", block: "start" });
  }
  const [path, q] = location.hash.split("?");
  const p = new URLSearchParams(q || "");
  p.set("node", key);
  history.replaceState(null, "", path + "?" + p);
}

// paneFor is the details of the selected row: every field a node has,
// multi-line errors as written.
function paneFor(rows) {
  rowsShown = rows;
  const r = rows.find((x) => rowKey(x) === selected);
  const box = el("div");
  const add = (...parts) => box.append(...parts.filter((p) => p !== null && p !== undefined));
  if (!r) {
    add(el("p", { class: "muted" }, "Pick a node to see its details."));
    return box;
  }
  const field = (k, v, cls) => (v === undefined || v === null || v === "" || (Array.isArray(v) && !v.length)) ? null :
    el("div", { class: "field", "data-field": k }, el("div", { class: "label" }, k),
      typeof v === "object" && !(v instanceof Node) ? el("pre", { class: cls }, pretty(v)) :
        v instanceof Node ? v : el("pre", { class: cls }, String(v)));
  if (r.exec) {
    const x = r.exec;
    add(el("h3", {}, "run ", el("code", {}, shortID(x.id))),
      field("rule", x.rule), field("outcome", x.outcome), field("key", x.key), field("trigger", x.topic), field("event id", x.event_id),
      field("started", when(x.started)), field("ended", when(x.ended)), field("took", took(x)), field("error", x.error, "err"),
      field("id", x.id));
    return box;
  }
  const n = r.node;
  add(el("h3", {}, el("span", { class: "kind" }, n.kind), " ", n.name || "", " ", el("span", { class: "muted" }, "#" + n.seq)),
    field("outcome", r.interrupted ? "interrupted (the process stopped mid-node)" : n.outcome),
    field("do", n.do), field("module", n.digest),
    field("started", precise(n.started)), field("ended", precise(n.ended)), field("took", instant(n) ? "" : took(n)),
    field("error", n.error, "err"), field("detail", n.detail),
    n.outcome === "open" || n.outcome === "held" ? field("due", dueOf(n)) : null,
    field(n.kind === "trigger" ? "event" : "input", n.input),
    field("saw", n.values), field("output", n.output),
    field("did", n.effects && n.effects.length ? n.effects.join("\n") : null),
    field("runs fired", n.children && n.children.length ? el("div", {}, n.children.map((c) => el("div", {}, runLink(c)))) : null),
    field("by", n.by));
  return box;
}

// ---- waiting steps -----------------------------------------------------

views.pending = {
  frame() { return el("section", {}, el("h2", {}, "Waiting steps"), el("div", { id: "body" })); },
  data() { return api("/v1/pending"); },
  render(recs) {
    if (!recs.length) return el("p", { class: "muted", id: "pending-table" }, "No step is waiting.");
    const t = table("pending-table", ["due", "rule", "step", "pass", "run", "module", ""], recs.map((p) =>
      el("tr", { "data-run": p.run }, el("td", { title: when(p.due) }, ago(p.due)), el("td", {}, ruleLink(p.rule)),
        el("td", {}, p.step), el("td", { class: "num" }, p.pass), el("td", {}, runLink(p.run)),
        el("td", {}, el("code", { title: p.digest || "" }, (p.digest || "").slice(0, 12))),
        el("td", { class: "actions" }, runButtons(p.run, ["now", "drop"])))), "stack");
    // The API answers the soonest 1,000 (api.DefaultPendingLimit).
    if (recs.length < 1000) return t;
    return el("div", {}, el("p", { class: "muted" }, "The 1,000 soonest; more may wait: ruled pending ls --limit N lists them."), t);
  },
};

// ---- plugins -----------------------------------------------------------

views.plugins = {
  frame() { return el("section", {}, el("h2", {}, "Plugins"), el("div", { id: "body" })); },
  async data() {
    const [ps, st, h] = await Promise.all([api("/v1/plugins"), api("/v1/status"), chartsData("only=plugins&ring=hour")]);
    return { ps, sig: st.signatures || null, h };
  },
  render({ ps, sig, h }) {
    const signed = sig && (sig.required || []).includes("plugins");
    const latency = (name) => {
      const l = h && h.hour.plugins && h.hour.plugins[name];
      if (!l) return "";
      const s = [{ name: "p50 ms", points: l.p50_ms, cls: "p50" }, { name: "p99 ms", points: l.p99_ms, cls: "p99" }];
      return el("span", { class: "spark", "data-latency": name }, lines(s, 120, 22, false), legend(s, true));
    };
    const plugins = table("plugins-table", ["plugin", "digest", "ABI", "functions", "granted", "reloads", "pinned (old versions kept for waiting steps)"]
      .concat(signed ? ["signed by"] : [], ["call latency, last hour", "last error"]),
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
          el("td", {}, pinned), ...(signed ? [el("td", { class: "signer" }, p.signed_by || "-")] : []),
          el("td", {}, latency(p.name)),
          el("td", { class: "err" }, p.last_error || ""));
      }), "stack");
    if (!sig) return plugins;
    // Where signatures are required: the keys trusted, and the files
    // refused now (the last good version of each keeps serving).
    const counts = Object.entries(sig.refusals || {}).map(([k, n]) => k + " " + n).join(", ");
    const refused = (sig.refused_files || []).length === 0
      ? el("p", { class: "muted" }, "No file is refused now.")
      : table("refused-table", ["file", "where", "why", "key", "since"],
        sig.refused_files.map((f) => el("tr", { "data-file": f.file },
          el("td", {}, el("code", {}, f.file)), el("td", {}, f.place), el("td", { class: "err" }, f.reason),
          el("td", {}, f.key || ""), el("td", {}, when(f.at)))), "stack");
    return el("div", {},
      section("Signatures",
        el("p", { id: "signatures" }, "Required for " + sig.required.join(", ") + "; trusted keys " + (sig.trusted_keys || []).join(", ") +
          ((sig.revoked_keys || []).length ? "; revoked " + sig.revoked_keys.join(", ") : "") +
          (counts ? "; refusals since the start: " + counts : "")),
        refused),
      plugins);
  },
};

// ---- routing and live updates ------------------------------------------

let current = null;
let shown = ""; // the data the page shows, as JSON: redrawn only when it changes

function route() {
  const h = location.hash.replace(/^#\/?/, "");
  const [path] = h.split("?");
  const [name, ...rest] = path.split("/");
  const view = views[name] ? name : "rules";
  let arg = rest.join("/");
  try {
    arg = decodeURIComponent(arg);
  } catch (e) {
    // a malformed escape: the view says it found nothing by that name
  }
  return { view, arg, path };
}

let inFlight = false, again = false;

// loadError is why the view's data did not load, "" when it did.
let loadError = "";

// failed shows why a view's data did not load: in the status, and in the
// body when there is nothing to show (a rule or run that does not
// exist), or over what the page showed before, marked out of date.
function failed(r, e) {
  const down = e instanceof TypeError; // fetch's own: no answer at all
  const msg = down ? "The daemon does not answer (" + e.message + "); what is shown may be out of date." : e.message;
  setStatus(down ? "the daemon does not answer" : e.message, true); // the body says it too, for as long as it lasts
  if (loadError === msg) return;
  loadError = msg;
  const body = $("#body");
  if (!body) return;
  if (!shown) {
    body.replaceChildren(el("div", { class: "load-error", id: "load-error" }, msg));
    for (const part of document.querySelectorAll("section.part")) part.hidden = true; // a form for nothing
  } else if (down) {
    document.body.classList.add("stale");
  } else {
    body.prepend(el("div", { class: "load-error", id: "load-error" }, msg));
  }
}

// daemonStarted is when the daemon started (its status), for "since".
let daemonStarted = "";

// refresh fetches the view's data and redraws its body if it changed; a
// refresh asked for while one runs is done once after it.
async function refresh() {
  if (inFlight) {
    again = true;
    return;
  }
  inFlight = true;
  const r = current;
  try {
    if (!r) return;
    const data = await views[r.view].data(r.arg);
    if (current !== r) return; // the route changed meanwhile
    loadError = "";
    document.body.classList.remove("stale");
    // Redraw only what changed: a table rebuilt on every change would
    // take the button under the operator's pointer away mid-click.
    // Relative times ("5m ago") move on: the body is drawn again each
    // minute even when nothing else changed.
    const key = JSON.stringify(data) + Math.floor(Date.now() / 60000);
    if (key !== shown) {
      shown = key;
      const body = $("#body");
      if (body) body.replaceChildren(views[r.view].render(data, r.arg));
    }
    setStatus((live ? "live" : "updated") + " · " + new Date().toLocaleTimeString());
  } catch (e) {
    if (current === r) failed(r, e);
  } finally {
    inFlight = false;
    if (again) {
      again = false;
      refresh();
    }
  }
}

function show() {
  loadError = "";
  const next = route();
  if (current && next.view === "run" && next.path === current.path) {
    current = next; // only the node picked changed: keep the page
    refresh();
    return;
  }
  current = next;
  shown = "";
  for (const a of document.querySelectorAll("nav a")) {
    const v = current.view === "run" ? "runs" : current.view === "rule" ? "rules" : current.view;
    a.classList.toggle("active", a.dataset.view === v);
  }
  main().replaceChildren(views[current.view].frame(current.arg));
  refresh();
}

// live: the change stream is open. Its lines each ask for a refresh;
// when it fails the page polls, and tries the stream again.
let live = false;

async function watchChanges() {
  let wait = 1000;
  for (;;) {
    try {
      const resp = await fetch("/v1/changes", { headers: authHeaders(), cache: "no-store" });
      if (resp.status === 401) { location.href = "/login.html"; return; }
      if (!resp.ok || !resp.body) throw new Error("no stream: " + resp.status);
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      let buf = "", first = true, last = "";
      live = true;
      document.body.classList.remove("stale");
      api("/v1/status").then((st) => { daemonStarted = st.started; }).catch(() => {});
      $("#live").className = "live on";
      $("#live").title = "the page follows the daemon as it changes";
      wait = 1000;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          // The first line after a (re)connect is news too: the daemon may
          // have restarted meanwhile, its counts back to nought.
          if (first || line !== last) refresh();
          first = false;
          last = line;
        }
      }
    } catch (e) {
      // fall through: poll until the stream is back
    }
    live = false;
    refresh(); // says at once whether the daemon answers
    $("#live").className = "live off";
    $("#live").title = "the change stream is away: polling";
    await new Promise((res) => setTimeout(res, wait));
    wait = Math.min(wait * 2, 15000);
  }
}

window.addEventListener("hashchange", show);
if (token()) {
  const out = $("#signout");
  out.hidden = false;
  out.addEventListener("click", (ev) => {
    ev.preventDefault();
    document.cookie = "ruled_token=; Path=/; SameSite=Strict; Max-Age=0";
    location.href = "/login.html?why=out";
  });
}
api("/v1/status").then((st) => { daemonStarted = st.started; }).catch(() => {});
api("/v1/whoami").then((w) => {
  scopes = w.scopes || null;
  const who = $("#who");
  who.textContent = (w.token ? "token " + w.token : w.by || "") + ": " + (scopes || []).join(", ");
  who.hidden = false;
  for (const a of document.querySelectorAll("nav a[data-scope]")) a.hidden = !can(a.dataset.scope);
}).catch(() => {}).finally(() => {
  show();
  watchChanges();
});
// "running for" moves on by itself.
setInterval(() => {
  for (const e of document.querySelectorAll("[data-running-since]")) {
    e.textContent = "running for " + dur(Date.now() - new Date(e.dataset.runningSince));
  }
}, 1000);
// A poll every 3 s while the stream is away, and every 15 s beside it: a
// stream a proxy holds up must not freeze the page.
let ticks = 0;
setInterval(() => { if (!live || ++ticks % 5 === 0) refresh(); }, 3000);
