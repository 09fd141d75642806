// warren console. Everything from the broker (names, ids, headers,
// payloads, failures) is put on the page with textContent, never as
// markup; the one HTML fragment inserted is the catalogue, rendered by the
// server from the schema directory with every text escaped.
"use strict";

const state = { view: "overview", lane: null, saga: null, messages: [], readOnly: true, canEdit: false, timer: null };
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// keepRows puts rows in tbody, keeping each row already there for the same
// key (the attribute named) and changing only what changed in it. The
// overview is read again every few seconds; a table built anew each time
// would swap the link under a pointer between its press and its release,
// and the click would be lost.
function keepRows(tbody, rows, key) {
  const old = new Map();
  for (const r of tbody.rows) if (r.hasAttribute(key)) old.set(r.getAttribute(key), r);
  place(tbody, rows.map((r) => {
    const o = r.hasAttribute(key) ? old.get(r.getAttribute(key)) : undefined;
    return o ? morph(o, r) : r;
  }));
}

// morph makes node o look like n and returns o, or returns n when o is of
// another kind. o keeps its listeners: callers morph only nodes built for
// the same key, whose listeners do the same.
function morph(o, n) {
  if (!o || o.nodeType !== n.nodeType || o.nodeName !== n.nodeName || o.namespaceURI !== n.namespaceURI) return n;
  if (o.nodeType !== Node.ELEMENT_NODE) {
    if (o.nodeValue !== n.nodeValue) o.nodeValue = n.nodeValue;
    return o;
  }
  if (o.isEqualNode(n)) return o;
  for (const a of Array.from(o.attributes)) if (!n.hasAttribute(a.name)) o.removeAttribute(a.name);
  for (const a of Array.from(n.attributes)) if (o.getAttribute(a.name) !== a.value) o.setAttribute(a.name, a.value);
  place(o, Array.from(n.childNodes).map((c, i) => morph(o.childNodes[i], c)));
  return o;
}

// place makes kids the children of parent, moving nothing already in its
// place: a node taken out and put back loses a click in progress.
function place(parent, kids) {
  const cur = parent.childNodes;
  if (kids.length === cur.length && kids.every((k, i) => k === cur[i])) return;
  parent.replaceChildren(...kids);
}

// The token comes in the address's fragment (never sent to a server),
// once, and is kept for this tab only.
function takeToken() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem("warren-token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  $("token").value = sessionStorage.getItem("warren-token") || "";
  $("token").addEventListener("change", () => sessionStorage.setItem("warren-token", $("token").value.trim()));
}

async function api(path, options) {
  const resp = await fetch(path, options);
  let body = {};
  try { body = await resp.json(); } catch (e) { body = { error: resp.status + " " + resp.statusText }; }
  if (!resp.ok && !body.error) body.error = resp.status + " " + resp.statusText;
  body.status = resp.status;
  return body;
}

function show(view) {
  state.view = view;
  for (const s of document.querySelectorAll(".view")) s.hidden = s.id !== view;
  for (const b of document.querySelectorAll("nav button")) b.classList.toggle("current", b.dataset.view === view);
  if (view === "catalogue") loadCatalogue();
  if (view === "schemas") loadSchemas();
}

// ---- overview ----

async function refresh() {
  const o = await api("api/overview");
  if (o.error && !o.consumers) {
    $("broker-error").hidden = false;
    $("broker-error").textContent = "The console cannot be read: " + o.error;
    return;
  }
  state.readOnly = o.read_only;
  $("broker").textContent = o.broker + (o.management ? " · management API " + o.management : "");
  $("mode").textContent = o.read_only ? "read-only" : "";
  $("token-row").hidden = o.read_only;
  $("broker-error").hidden = !o.error;
  $("broker-error").textContent = o.error ? "The last reading failed; showing the one before: " + o.error : "";
  $("history-span").textContent = span(o.history_ms);
  const tbody = $("figures").tBodies[0];
  keepRows(tbody, o.consumers.map((c) => row(c, o.history_ms)), "data-consumer");
  later(o.delayed, o.outbox);
  sagas(o.sagas);
  $("unshown").replaceChildren(...o.unshown.map((u) => el("li", {}, "Not shown: " + u)));
  $("updated").textContent = "Read " + (o.consumers[0] && o.consumers[0].read_at ? new Date(o.consumers[0].read_at).toLocaleTimeString() : "-") +
    ", every " + o.interval_ms / 1000 + "s.";
}

// later shows what waits to be published later: in the delay levels, and
// in the outbox table's schedule. Either is absent when not configured.
function later(delayed, outbox) {
  $("later").hidden = !delayed && !outbox;
  $("delayed").hidden = !delayed;
  if (delayed) {
    const missing = delayed.missing.length > 0;
    const levels = delayed.levels.map((l) => l.hold + ":" + l.messages).join(" ");
    $("delayed").tBodies[0].replaceChildren(el("tr", { class: missing || delayed.unroutable > 0 ? "alert" : "" },
      el("td", { class: "num waiting" }, missing ? "- (not declared)" : delayed.waiting),
      el("td", { class: "levels" }, missing ? "-" : levels || "-"),
      el("td", { class: "num within" }, delayed.next_due_within || "-"),
      el("td", { class: "num unroutable" + (delayed.unroutable > 0 ? " hot" : "") }, missing ? "-" : delayed.unroutable)));
  }
  $("outbox").hidden = !outbox;
  if (outbox) {
    const oldest = outbox.oldest_pending ? ago(new Date(outbox.oldest_pending)) : "-";
    const next = outbox.next_due ? new Date(outbox.next_due).toLocaleString() + " (in " + ago(new Date(), new Date(outbox.next_due)) + ")" : "-";
    const name = el("td", {}, outbox.table);
    if (outbox.error) name.append(el("div", { class: "alert-text" }, "The last reading failed: " + outbox.error));
    $("outbox").tBodies[0].replaceChildren(el("tr", { class: outbox.failed > 0 || outbox.error ? "alert" : "" },
      name,
      el("td", { class: "num pending" }, outbox.pending),
      el("td", { class: "num" }, outbox.retrying),
      el("td", { class: "num" }, oldest),
      el("td", { class: "num failed" + (outbox.failed > 0 ? " hot" : "") }, outbox.failed),
      el("td", { class: "num scheduled" }, outbox.scheduled),
      el("td", { class: "num next" }, next)));
  }
}

// sagas shows the instances of each saga; absent without --saga-dsn.
function sagas(s) {
  $("sagas-view").hidden = !s;
  if (!s) return;
  const rows = s.sagas.map((g) => el("tr", { "data-saga": g.saga },
    el("td", {}, el("a", { href: "#", class: "saga", onclick: (e) => { e.preventDefault(); openSaga(g.saga); } }, g.saga)),
    el("td", { class: "num running" }, g.running),
    el("td", { class: "num" }, g.oldest_running ? ago(new Date(g.oldest_running)) : "-"),
    el("td", { class: "num" }, g.with_timeouts),
    el("td", { class: "num completed" }, g.completed)));
  if (s.error) rows.unshift(el("tr", { class: "alert" }, el("td", { colspan: 5 }, s.table + ": the last reading failed: " + s.error)));
  keepRows($("sagas").tBodies[0], rows, "data-saga");
}

// ---- a saga's instances ----

async function openSaga(name) {
  state.saga = name;
  show("saga");
  $("saga-name").textContent = name;
  await loadSaga();
}

// loadSaga lists the saga's instances as the state and order pickers
// say, at most the server's limit, and says how many more there are.
async function loadSaga() {
  $("saga-info").textContent = "Reading…";
  const st = $("saga-state").value, order = $("saga-order").value;
  const p = await api("api/sagas/" + encodeURIComponent(state.saga) + "/instances?state=" + encodeURIComponent(st) + "&order=" + encodeURIComponent(order));
  const list = p.error ? [] : p.instances;
  const kind = st === "all" ? "" : st + " ";
  $("saga-info").textContent = p.error ? p.error
    : p.table + ": " + p.total + " " + kind + "instance" + (p.total === 1 ? "" : "s") +
      (p.more > 0 ? "; the " + list.length + " " + (order === "newest" ? "newest" : "oldest") + " listed, " + p.more + " more not shown" : "");
  const now = new Date();
  const rows = list.map((i) => el("tr", { class: "instance", "data-instance": i.instance },
    el("td", { class: "mono" }, i.instance),
    el("td", { class: "state" }, i.state + (i.completed_at ? " " + ago(new Date(i.completed_at), now) + " ago" : "")),
    el("td", { class: "num version" }, i.version),
    el("td", { class: "num age" }, ago(new Date(i.created_at), now)),
    el("td", {}, ago(new Date(i.updated_at), now) + " ago"),
    el("td", { class: "timeouts" }, ...timeouts(i.timeouts, now))));
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No instances.")));
  $("instances").tBodies[0].replaceChildren(...rows);
}

// timeouts lists an instance's pending timeouts: each one's name and
// when it is due, or that its fact was published and awaits the saga.
function timeouts(list, now) {
  if (list.length === 0) return ["-"];
  return list.map((t) => {
    let when = "published, on its way";
    if (t.due_at) {
      const due = new Date(t.due_at);
      when = "due " + due.toLocaleString() + (due > now ? " (in " + ago(now, due) + ")" : " (" + ago(due, now) + " ago)");
    }
    return el("div", { class: "timeout", "data-timeout": t.name, title: "outbox message " + t.message_id },
      el("span", { class: "mono timeout-name" }, t.name), " ", el("span", { class: "timeout-due", "data-due": t.due_at || "" }, when));
  });
}

// ago renders the time from a to b (b defaults to now) for a person.
function ago(a, b) {
  const s = Math.max(0, Math.round(((b || new Date()) - a) / 1000));
  if (s < 120) return s + "s";
  if (s < 7200) return Math.round(s / 60) + "m";
  if (s < 172800) return Math.round(s / 3600) + "h";
  return Math.round(s / 86400) + "d";
}

// streamLag shows a stream consumer's place in its stream; for a consumer
// of a super stream, the sum of its partitions' lags, then each
// partition's place on a line of its own.
function streamLag(s) {
  const title = "offsets after its stored offset up to the stream's tail: facts not settled yet, and the stream's offset-tracking records among them";
  if (!s.partitions) return el("div", { class: "stream-lag", title }, "stream " + s.stream + ": " + streamPlace(s));
  const sum = s.lag === null ? "lag not known" : "lag " + s.lag;
  return el("div", { class: "stream-lag", title: title + "; summed over the partitions" },
    "super stream " + s.stream + ": " + sum + " in " + s.partitions.length + " partitions",
    ...s.partitions.map((p) => el("div", { class: "stream-partition", "data-partition": p.stream }, p.stream + ": " + streamPlace(p))));
}

// streamPlace describes the place of an offset in one stream (or
// partition), or why it could not be read.
function streamPlace(s) {
  if (s.error) return s.error === "not declared" ? "not declared" : "not read: " + s.error;
  const tail = s.tail === null ? "holds no fact" : "tail " + s.tail;
  const stored = s.stored === null ? "nothing stored yet" : "stored " + s.stored;
  const lag = s.lag === null ? "" : "lag " + s.lag + " · ";
  return lag + stored + ", " + tail;
}

function row(c, historyMs) {
  const alert = c.alerts.length > 0;
  const rate = c.rates
    ? c.rates.redelivered.toFixed(2) + "/s" + (c.rates.delivered > 0 ? " (" + (100 * c.rates.redelivered / c.rates.delivered).toFixed(1) + "%)" : "")
    : "n/a";
  const tiers = c.tiers.filter((t) => t.messages > 0).map((t) => t.delay + ":" + t.messages).join(" ");
  const name = el("td", {}, el("a", { href: "#", class: "consumer", onclick: (e) => { e.preventDefault(); openLane(c.consumer); } }, c.consumer));
  if (c.batch) name.append(el("span", { class: "legend" }, "batches of " + c.batch.size + ", " + c.batch.wait));
  if (c.stream) name.append(streamLag(c.stream));
  if (c.versions) name.append(el("div", { class: "versions", title: "versions read: its own, and older ones through upcasts" }, "reads " + c.versions));
  if (alert) name.append(el("div", { class: "alert-text" }, c.alerts.join("; ")));
  const tr = el("tr", { class: alert ? "alert" : "", "data-consumer": c.consumer },
    name,
    el("td", { class: "num work" }, c.missing.length ? "-" : c.work),
    el("td", { class: "num poison" + (c.poison > 0 ? " hot" : "") }, c.missing.length ? "-" : c.poison),
    el("td", { class: "num consumers" + (c.work > 0 && c.consumers === 0 ? " hot" : "") }, c.missing.length ? "-" : c.consumers),
    el("td", { class: "num" }, c.retrying + (tiers ? " (" + tiers + ")" : "")),
    el("td", { class: "num rate" }, rate),
    el("td", {}, chart(c.history, historyMs)));
  return tr;
}

// chart draws the history as an inline SVG: work and poison depth on one
// scale (its top is labelled), the consumer count dashed on its own.
function chart(points, historyMs) {
  const w = 260, h = 44;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.setAttribute("class", "chart");
  const now = Date.now();
  const x = (t) => Math.max(0, w - ((now - t) / historyMs) * w);
  const depthTop = Math.max(1, ...points.map((p) => Math.max(p[1], p[2])));
  const consumersTop = Math.max(1, ...points.map((p) => p[3]));
  const series = [[3, "k-consumers", consumersTop], [1, "k-work", depthTop], [2, "k-poison", depthTop]];
  for (const [i, cls, top] of series) {
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("class", cls);
    line.setAttribute("points", points.map((p) => x(p[0]).toFixed(1) + "," + (h - 3 - (p[i] / top) * (h - 14)).toFixed(1)).join(" "));
    svg.append(line);
  }
  const label = document.createElementNS(SVG, "text");
  label.setAttribute("x", 3);
  label.setAttribute("y", 10);
  label.setAttribute("class", "scale");
  label.textContent = "max " + depthTop;
  svg.append(label);
  return svg;
}

function span(ms) {
  return ms >= 3600000 ? (ms / 3600000) + " h" : ms >= 60000 ? Math.round(ms / 60000) + " min" : Math.round(ms / 1000) + " s";
}

// ---- poison lane ----

async function openLane(name) {
  state.lane = name;
  show("lane");
  $("lane-name").textContent = name;
  $("result").textContent = "";
  $("export-link").hidden = true;
  await laneTab("messages");
}

// laneTab shows the lane's messages one by one, or grouped by cause.
async function laneTab(which) {
  $("tab-messages").classList.toggle("current", which === "messages");
  $("tab-causes").classList.toggle("current", which === "causes");
  $("messages-pane").hidden = $("messages").hidden = which !== "messages";
  $("causes-pane").hidden = which !== "causes";
  if (which === "causes") await loadCauses();
  else await loadLane();
}

// ---- causes ----

async function loadCauses() {
  $("causes-info").textContent = "Reading…";
  const p = await api("api/consumers/" + encodeURIComponent(state.lane) + "/causes");
  const groups = p.error ? [] : p.groups;
  $("causes-info").textContent = p.error ? p.error
    : p.poison_queue + ": " + p.messages + " message" + (p.messages === 1 ? "" : "s") + " in " + groups.length + " group" + (groups.length === 1 ? "" : "s") + " by cause";
  const rows = groups.map((g) => {
    const actions = el("td", { class: "actions" });
    if (!state.readOnly) {
      for (const action of ["retry", "discard", "export"]) {
        actions.append(el("button", { type: "button", class: "group-" + action, onclick: () => askGroup(action, g) }, action[0].toUpperCase() + action.slice(1)));
      }
    }
    return el("tr", { class: "cause", "data-group": g.id },
      el("td", { class: "mono" }, g.id),
      el("td", {}, g.kind + (g.exception ? " (" + g.exception + ")" : "")),
      el("td", { class: "num count" }, g.count),
      el("td", {}, g.first_seen || "-"),
      el("td", {}, g.last_seen || "-"),
      el("td", { class: "mono keys" }, g.routing_keys.map((k) => k.key + " " + k.count).join(", ")),
      el("td", { class: "failure cause-text", title: g.example }, g.cause),
      actions);
  });
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 8, class: "muted" }, "No messages.")));
  $("causes").tBodies[0].replaceChildren(...rows);
}

function askGroup(action, g) {
  state.pending = { action, group: g.id, count: g.count };
  $("confirm").hidden = false;
  $("reason-row").hidden = action !== "discard";
  $("reason").value = "";
  const n = g.count + " message" + (g.count === 1 ? "" : "s");
  $("confirm-text").textContent = {
    retry: "Retry the " + n + " of group " + g.id + " to the work queue of " + state.lane + "? If the group no longer holds " + g.count + ", nothing is done.",
    discard: "Discard the " + n + " of group " + g.id + "? They are kept in " + state.lane + ".discarded with your reason.",
    export: "Export the " + n + " of group " + g.id + " as JSON lines? They stay in the poison lane.",
  }[action];
}

async function actOnGroup() {
  const { action, group, count } = state.pending;
  const body = { expect: count };
  if (action === "discard") {
    body.reason = $("reason").value.trim();
    if (!body.reason) { $("result").textContent = "Give a reason for discarding."; return; }
  }
  $("confirm").hidden = true;
  $("result").textContent = "Working…";
  const r = await post("api/consumers/" + encodeURIComponent(state.lane) + "/groups/" + encodeURIComponent(group) + "/" + action, body);
  $("result").className = r.error ? "error" : "done";
  $("result").textContent = r.summary ? r.summary + (r.error ? ". Stopped: " + r.error : ".") : "Refused: " + r.error;
  if (action === "export" && r.lines) {
    const link = $("export-link");
    if (link.href) URL.revokeObjectURL(link.href);
    link.href = URL.createObjectURL(new Blob([r.lines], { type: "application/x-ndjson" }));
    link.download = state.lane + "-" + group + ".jsonl";
    link.hidden = false;
  }
  await loadCauses();
}

function post(path, body) {
  return api(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Warren-Token": sessionStorage.getItem("warren-token") || "" },
    body: JSON.stringify(body),
  });
}

// editor lets a person correct one message's payload; the server checks
// it against the fact's schema before anything is sent.
function editor(m) {
  const box = el("textarea", { class: "edit-payload", rows: 8, spellcheck: "false" });
  box.value = m.payload;
  const said = el("p", { class: "edit-result", role: "status" });
  const send = el("button", { type: "button", class: "edit-send", onclick: async () => {
    said.className = "edit-result";
    said.textContent = "Checking…";
    const r = await post("api/consumers/" + encodeURIComponent(state.lane) + "/edit", { id: m.id, payload: box.value });
    said.className = "edit-result " + (r.error ? "error" : "done");
    said.textContent = r.error ? "Refused: " + r.error : r.summary + ".";
    if (!r.error) { $("result").className = "done"; $("result").textContent = r.summary + "."; await loadLane(); }
  } }, "Check against the schema and retry");
  return el("div", { class: "editor" }, el("h4", {}, "Edit the payload"), box, send, said);
}

async function loadLane() {
  $("lane-info").textContent = "Reading…";
  const p = await api("api/consumers/" + encodeURIComponent(state.lane) + "/poison");
  if (p.error) {
    $("lane-info").textContent = p.error;
    state.messages = [];
  } else {
    state.messages = p.messages;
    state.canEdit = p.can_edit;
    $("lane-info").textContent = p.poison_queue + ": " + p.messages.length + " message" + (p.messages.length === 1 ? "" : "s") +
      (p.messages.length >= p.limit ? " (the first " + p.limit + ")" : "");
  }
  const keys = [...new Set(state.messages.map((m) => m.routing_key))].sort();
  const sel = $("filter-key"), was = sel.value;
  sel.replaceChildren(el("option", { value: "" }, "all"), ...keys.map((k) => el("option", { value: k }, k)));
  sel.value = keys.includes(was) ? was : "";
  $("replay").hidden = $("discard").hidden = state.readOnly;
  renderMessages();
}

function visible() {
  const key = $("filter-key").value, q = $("filter-text").value.trim().toLowerCase();
  return state.messages.filter((m) => (!key || m.routing_key === key) &&
    (!q || [m.id, m.routing_key, m.failure, m.payload, ...m.headers.map((h) => h.name + " " + h.value)].join("\n").toLowerCase().includes(q)));
}

function renderMessages() {
  const tbody = $("messages").tBodies[0];
  const rows = [];
  for (const m of visible()) {
    const box = el("input", { type: "checkbox", class: "pick", "data-id": m.id, onchange: updateButtons });
    if (!m.id) box.disabled = true;
    rows.push(el("tr", { class: "message", "data-id": m.id },
      el("td", {}, box),
      el("td", { class: "mono" }, m.id || "(no id)"),
      el("td", { class: "mono" }, m.routing_key),
      el("td", { class: "num" }, m.attempts + (m.replays ? " (replayed " + m.replays + ")" : "")),
      el("td", {}, m.failed_at || "-"),
      el("td", { class: "failure" }, m.failure)));
    const headers = el("dl", { class: "headers" });
    for (const h of m.headers) headers.append(el("dt", {}, h.name), el("dd", {}, el("pre", {}, h.value)));
    rows.push(el("tr", { class: "detail" }, el("td", {}, ""), el("td", { colspan: 5 },
      el("details", {},
        el("summary", {}, "payload, x-failure and headers"),
        el("h4", {}, "x-failure"), el("pre", { class: "x-failure" }, m.failure || "-"),
        el("h4", {}, "Payload" + (m.occurred_at ? " (occurred at " + m.occurred_at + ")" : "") + (m.payload_json ? "" : " (not JSON)")),
        el("pre", { class: "payload" }, m.payload),
        state.canEdit && !state.readOnly && m.id ? editor(m) : "",
        el("h4", {}, "Headers"), headers))));
  }
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No messages.")));
  tbody.replaceChildren(...rows);
  $("select-all").checked = false;
  updateButtons();
}

function picked() {
  return [...document.querySelectorAll("input.pick:checked")].map((b) => b.dataset.id);
}

function updateButtons() {
  const n = picked().length;
  $("replay").disabled = $("discard").disabled = n === 0;
  $("replay").textContent = "Replay selected" + (n ? " (" + n + ")" : "");
  $("discard").textContent = "Discard selected" + (n ? " (" + n + ")" : "");
}

function ask(action) {
  const ids = picked();
  state.pending = { action, ids };
  $("confirm").hidden = false;
  $("reason-row").hidden = action !== "discard";
  $("reason").value = "";
  $("confirm-text").textContent = action === "replay"
    ? "Replay " + ids.length + " message" + (ids.length === 1 ? "" : "s") + " to the work queue of " + state.lane + "? Each copy is confirmed by the broker before the poison message is removed."
    : "Discard " + ids.length + " message" + (ids.length === 1 ? "" : "s") + " from the poison lane of " + state.lane + "? They are kept in " + state.lane + ".discarded with your reason.";
}

async function act() {
  if (state.pending.group) return actOnGroup();
  const { action, ids } = state.pending;
  const body = { ids };
  if (action === "discard") {
    body.reason = $("reason").value.trim();
    if (!body.reason) { $("result").textContent = "Give a reason for discarding."; return; }
  }
  $("confirm").hidden = true;
  $("result").textContent = (action === "replay" ? "Replaying" : "Discarding") + "…";
  const r = await post("api/consumers/" + encodeURIComponent(state.lane) + "/" + action, body);
  $("result").className = r.error ? "error" : "done";
  $("result").textContent = r.summary
    ? r.summary + (r.done.length ? ": " + r.done.map((d) => d.id + " (" + d.routing_key + ")").join(", ") : "") + (r.error ? ". Stopped: " + r.error : ".")
    : "Refused: " + r.error;
  if (!r.error || r.done) await loadLane();
}

// ---- catalogue and schemas ----

async function loadCatalogue() {
  if ($("catalogue").dataset.loaded) return;
  const resp = await fetch("api/catalogue");
  // Rendered by the server from the schema directory: text escaped, raw
  // HTML dropped but for the catalogue's own anchors.
  $("catalogue").innerHTML = await resp.text();
  $("catalogue").dataset.loaded = "1";
}

async function loadSchemas() {
  if ($("schemas").dataset.loaded) return;
  const r = await api("api/schemas");
  $("schemas").replaceChildren(...(r.schemas || []).map((s) => el("article", { class: "schema" },
    el("h3", { class: "mono" }, s.routing_key),
    el("p", {}, s.title + " · version " + s.version + " · " + s.source),
    el("p", {}, s.description || ""),
    el("pre", {}, s.schema))));
  $("schemas").dataset.loaded = "1";
}

// ---- wiring ----

document.addEventListener("DOMContentLoaded", async () => {
  takeToken();
  for (const b of document.querySelectorAll("nav button")) b.addEventListener("click", () => show(b.dataset.view));
  $("back").addEventListener("click", () => show("overview"));
  $("saga-back").addEventListener("click", () => show("overview"));
  $("saga-reload").addEventListener("click", loadSaga);
  $("saga-state").addEventListener("change", loadSaga);
  $("saga-order").addEventListener("change", loadSaga);
  $("reload").addEventListener("click", loadLane);
  $("tab-messages").addEventListener("click", () => laneTab("messages"));
  $("tab-causes").addEventListener("click", () => laneTab("causes"));
  $("filter-key").addEventListener("change", renderMessages);
  $("filter-text").addEventListener("input", renderMessages);
  $("select-all").addEventListener("change", () => {
    for (const b of document.querySelectorAll("input.pick:not(:disabled)")) b.checked = $("select-all").checked;
    updateButtons();
  });
  $("replay").addEventListener("click", () => ask("replay"));
  $("discard").addEventListener("click", () => ask("discard"));
  $("confirm-yes").addEventListener("click", act);
  $("confirm-no").addEventListener("click", () => { $("confirm").hidden = true; });
  await refresh();
  const o = await api("api/overview");
  setInterval(() => { if (state.view === "overview") refresh(); }, Math.max(1000, Math.min(o.interval_ms || 5000, 5000)));
});
