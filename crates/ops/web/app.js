// The nameserver dashboard: reads the server's own JSON API (/api/v1/) and event stream.
// Plain browser JavaScript, no library, nothing fetched from anywhere but this server.
"use strict";

const POLL_MS = 2000;
const PAGE = 50;
const SVG = "http://www.w3.org/2000/svg";

const $ = (selector) => document.querySelector(selector);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

async function getJson(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.message || response.statusText);
  return body;
}

function seconds(value) {
  if (value === null || value === undefined) return "";
  return value < 10 ? `${value.toFixed(1)} s ago` : `${Math.round(value)} s ago`;
}

// ---- Overview ----

async function refreshOverview() {
  const o = await getJson("/api/v1/overview");
  const overview = $("#overview");
  overview.replaceChildren(
    "version ", el("b", {}, o.version), ` (${o.gitCommit}) · up `, el("b", {}, `${Math.round(o.uptimeSeconds)} s`),
    " · ", el("b", {}, o.ready ? "ready" : "not ready"),
    " · remoting ", el("b", {}, o.remotingAddress || "?"),
    " · ", el("b", {}, o.liveBrokers), " live brokers · ", el("b", {}, o.topics), " topics · ",
    el("b", {}, o.connections), " connections",
  );
}

// ---- Clusters → broker groups → brokers ----

/** live < ½ timeout ≤ late < timeout ≤ overdue; not live: down. */
function liveness(broker) {
  if (!broker.live) return "down";
  const ratio = broker.secondsSinceHeartbeat / broker.heartbeatTimeoutSeconds;
  if (ratio >= 1) return "overdue";
  if (ratio >= 0.5) return "late";
  return "live";
}

const knownClusters = new Set();

async function refreshClusters() {
  const data = await getJson("/api/v1/clusters");
  const rows = [];
  for (const cluster of data.clusters) {
    if (!knownClusters.has(cluster.name)) {
      knownClusters.add(cluster.name);
      $("#topic-cluster").append(el("option", { value: cluster.name }, cluster.name));
    }
    for (const group of cluster.brokerGroups) {
      for (const broker of group.brokers) {
        const state = liveness(broker);
        const dv = broker.dataVersion ? broker.dataVersion.counter : "";
        rows.push(el("tr", { "data-addr": broker.address, "data-cluster": cluster.name, "data-group": group.name, "data-state": state },
          el("td", {}, cluster.name), el("td", {}, group.name),
          el("td", {}, broker.id === 0 ? "0 (master)" : broker.id),
          el("td", {}, broker.address), el("td", {}, broker.version || ""), el("td", {}, broker.zone || ""),
          el("td", {}, dv), el("td", {}, seconds(broker.secondsSinceHeartbeat)),
          el("td", {}, broker.heartbeatTimeoutSeconds ? `${broker.heartbeatTimeoutSeconds} s` : ""),
          el("td", {}, el("span", { class: `state ${state}` }, state))));
      }
    }
  }
  if (rows.length === 0) rows.push(emptyRow(10, "no broker has registered"));
  $("#brokers tbody").replaceChildren(...rows);
}

/** A table row saying there is nothing to show. */
function emptyRow(columns, text) {
  return el("tr", { class: "empty" }, el("td", { colspan: columns }, text));
}

/** A list item saying there is nothing to show. */
function emptyItem(text) {
  return el("li", { class: "empty" }, text);
}

// ---- Topics: server-side paging and filtering, then the chosen topic's route ----

const topics = { offset: 0, total: 0, selected: null, timer: null };

async function refreshTopics() {
  const params = new URLSearchParams({ offset: topics.offset, limit: PAGE });
  const prefix = $("#topic-search").value.trim();
  const cluster = $("#topic-cluster").value;
  if (prefix) params.set("prefix", prefix);
  if (cluster) params.set("cluster", cluster);
  const page = await getJson(`/api/v1/topics?${params}`);
  topics.total = page.total;
  $("#topic-total").textContent = `${page.total} matching`;
  const last = Math.min(page.offset + page.topics.length, page.total);
  $("#topic-page").textContent = page.total ? `${page.offset + 1}–${last} of ${page.total}` : "none";
  const items = page.topics.map((t) => el("li", {
    "data-topic": t.name,
    class: t.name === topics.selected ? "selected" : null,
    onclick: () => showRoute(t.name),
  }, t.name, " ", el("small", {}, t.queueDatas.map((q) => q.brokerName).join(", "))));
  if (items.length === 0) items.push(emptyItem(prefix || cluster ? "no topic matches" : "no topic yet: brokers register them"));
  $("#topic-list").replaceChildren(...items);
}

function topicsChanged() {
  clearTimeout(topics.timer);
  topics.timer = setTimeout(() => { topics.offset = 0; refreshTopics().catch(showError); }, 200);
}

async function showRoute(name) {
  topics.selected = name;
  for (const li of document.querySelectorAll("#topic-list li")) {
    li.classList.toggle("selected", li.dataset.topic === name);
  }
  const panel = $("#route");
  let route;
  try {
    route = await getJson(`/api/v1/topics/${encodeURIComponent(name)}/route`);
  } catch (e) {
    panel.replaceChildren(el("p", { class: "error" }, `${name}: ${e.message}`));
    return;
  }
  const brokers = route.brokerDatas.flatMap((b) => Object.entries(b.brokerAddrs).map(([id, addr]) =>
    el("tr", { "data-broker": b.brokerName, "data-addr": addr }, el("td", {}, b.cluster), el("td", {}, b.brokerName), el("td", {}, id), el("td", {}, addr))));
  const queues = route.queueDatas.map((q) => el("tr", { "data-queue": q.brokerName },
    el("td", {}, q.brokerName), el("td", {}, q.readQueueNums), el("td", {}, q.writeQueueNums), el("td", {}, q.perm)));
  panel.replaceChildren(
    el("h3", { "data-route": name }, `Route of ${name}`),
    el("table", { id: "route-brokers" }, el("thead", {}, el("tr", {}, el("th", {}, "cluster"), el("th", {}, "broker"), el("th", {}, "id"), el("th", {}, "address"))), el("tbody", {}, ...brokers)),
    el("table", { id: "route-queues" }, el("thead", {}, el("tr", {}, el("th", {}, "broker"), el("th", {}, "read queues"), el("th", {}, "write queues"), el("th", {}, "perm"))), el("tbody", {}, ...queues)),
  );
}

// ---- Request rate and latency: the server's own history (one point per step), drawn at once ----

/** Draws `series` (arrays of numbers or null, one per point) as polylines in `svg`, or says
 *  `empty` when there is no point. */
function drawChart(svg, series, empty) {
  const length = Math.max(0, ...series.map((s) => s.length));
  const values = series.flat().filter((v) => v !== null && v !== undefined);
  const note = svg.parentElement.querySelector(".chart-note");
  note.textContent = length === 0 ? empty : "";
  note.hidden = length !== 0;
  svg.dataset.points = String(length);
  if (length === 0) {
    svg.replaceChildren();
    return;
  }
  const max = Math.max(1e-9, ...values);
  const step = 400 / Math.max(1, length - 1);
  svg.replaceChildren(...series.map((s, n) => {
    const line = document.createElementNS(SVG, "polyline");
    const offset = length - s.length;
    const points = s.map((v, i) => (v === null || v === undefined) ? null : `${(i + offset) * step},${120 - (v / max) * 110}`)
      .filter((p) => p !== null);
    line.setAttribute("points", points.join(" "));
    line.setAttribute("class", `line-${n}`);
    return line;
  }));
}

function fixed(value) {
  return value === null || value === undefined ? "–" : value.toFixed(1);
}

async function refreshStats() {
  let stats;
  try {
    stats = await getJson("/api/v1/stats");
  } catch (e) {
    $("#rate-now").textContent = `(${e.message})`;
    return;
  }
  const points = stats.history.points;
  const waiting = `no point yet: the server adds one every ${stats.history.stepSeconds} s`;
  drawChart($("#rate-chart"), [points.map((p) => p.rate)], waiting);
  drawChart($("#latency-chart"), [points.map((p) => p.meanMicros), points.map((p) => p.p99Micros)], waiting);
  const last = points.at(-1);
  $("#rate-now").textContent = last ? `now ${fixed(last.rate)}` : "";
  $("#latency-now").textContent = last ? `now mean ${fixed(last.meanMicros)}, p99 ${fixed(last.p99Micros)}` : "";
  const rows = stats.durations
    .slice()
    .sort((a, b) => b.count - a.count)
    .map((d) => el("tr", { "data-code": d.code }, el("td", {}, `${d.request} (${d.code})`), el("td", {}, d.count),
      el("td", {}, d.count ? `${((d.sumSeconds / d.count) * 1e6).toFixed(1)} µs` : "")));
  if (rows.length === 0) rows.push(emptyRow(3, "no request yet"));
  $("#codes tbody").replaceChildren(...rows);
}

// ---- The embedded controller (enableControllerInNamesrv) ----

async function refreshController() {
  const response = await fetch("/api/v1/controller", { headers: { Accept: "application/json" } });
  const section = $("#controller-section");
  if (response.status === 404) {
    section.hidden = true;
    return false;
  }
  section.hidden = false;
  const body = await response.json();
  if (!response.ok) {
    $("#controller-summary").replaceChildren(el("span", { class: "error" }, body.message || response.statusText));
    $("#controller-groups tbody").replaceChildren();
    return true;
  }
  $("#controller-summary").replaceChildren(
    "group ", el("b", {}, body.group), " · this node ", el("b", {}, body.id), " ",
    el("span", { class: `role ${body.role}`, "data-role": body.role }, body.role),
    " · leader ", el("b", { "data-leader": body.leader ? body.leader.id : "" }, body.leader ? `${body.leader.id} (${body.leader.address})` : "none known"),
    " · term ", el("b", { "data-term": body.term }, body.term),
    " · commit index ", el("b", {}, body.commitIndex ?? "–"),
    " · ", el("b", {}, body.liveBrokers), " live brokers",
  );
  const rows = body.groups.map((g) => el("tr", { "data-group": g.brokerName, "data-master": g.masterBrokerId ?? "" },
    el("td", {}, g.cluster), el("td", {}, g.brokerName),
    el("td", {}, g.masterBrokerId === null ? "none" : `${g.masterBrokerId} (${g.masterAddress || "?"})`),
    el("td", {}, el("span", { class: `state ${g.masterAlive ? "live" : "down"}` }, g.masterAlive ? "alive" : "not alive")),
    el("td", {}, g.masterEpoch), el("td", {}, g.syncStateSet.join(", ")), el("td", {}, g.brokers)));
  if (rows.length === 0) rows.push(emptyRow(7, "no broker group in controller mode yet"));
  $("#controller-groups tbody").replaceChildren(...rows);
  return true;
}

// ---- KV ----

async function refreshKv() {
  const data = await getJson("/api/v1/kv");
  const items = data.namespaces.map((ns) => el("li", {
    "data-namespace": ns.namespace,
    onclick: () => showNamespace(ns.namespace),
  }, `${ns.namespace} (${ns.entries})`));
  if (items.length === 0) items.push(emptyItem("no KV entry (mqadmin updateKvConfig adds them)"));
  $("#kv-list").replaceChildren(...items);
}

async function showNamespace(name) {
  const data = await getJson(`/api/v1/kv/${encodeURIComponent(name)}`);
  $("#kv-entries tbody").replaceChildren(...Object.entries(data.entries).map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v))));
}

// ---- Events, live ----

const MAX_EVENTS = 200;

function addEvent(event) {
  const when = new Date(event.timeMs).toLocaleTimeString();
  const subject = [event.cluster, event.brokerName, event.brokerAddr, event.topic].filter((x) => x !== undefined && x !== null).join(" ");
  // Spaces between the parts, so that the text reads right whatever the styling.
  const item = el("li", { "data-kind": event.kind, "data-id": event.id, "data-addr": event.brokerAddr },
    el("time", {}, when), " ", el("span", { class: "kind" }, event.kind.replaceAll("_", " ")), " ",
    el("span", { class: "subject" }, subject), " ", el("small", {}, event.detail));
  const list = $("#events");
  list.querySelector("li.empty")?.remove();
  list.prepend(item);
  while (list.children.length > MAX_EVENTS) list.lastChild.remove();
}

function connectEvents() {
  const source = new EventSource("/api/v1/events/stream");
  const kinds = ["broker_registered", "broker_reregistered", "broker_expired", "broker_unregistered",
    "write_perm_wiped", "write_perm_added", "config_updated", "topic_deleted"];
  for (const kind of kinds) {
    source.addEventListener(kind, (message) => {
      addEvent(JSON.parse(message.data));
      refreshClusters().catch(showError);
    });
  }
  source.onopen = () => {
    $("#events-status").textContent = "live";
    const list = $("#events");
    if (list.children.length === 0) list.append(emptyItem("no event yet: registrations, expiries and changes appear here"));
  };
  // The browser reconnects by itself (sending Last-Event-ID, so nothing is missed).
  source.onerror = () => { $("#events-status").textContent = "reconnecting…"; };
}

/** Polls the controller panel while this nameserver has a controller (a 404 ends it). */
async function watchController() {
  const again = await refreshController().catch((e) => { showError(e); return true; });
  if (again) setTimeout(watchController, POLL_MS);
}

// ---- Start ----

function showError(e) {
  $("#overview").replaceChildren(el("span", { class: "error" }, `error: ${e.message}`));
}

function poll(fn, ms) {
  const run = () => fn().catch(showError);
  run();
  setInterval(run, ms);
}

$("#topic-search").addEventListener("input", topicsChanged);
$("#topic-cluster").addEventListener("change", topicsChanged);
$("#topic-prev").addEventListener("click", () => { topics.offset = Math.max(0, topics.offset - PAGE); refreshTopics().catch(showError); });
$("#topic-next").addEventListener("click", () => { if (topics.offset + PAGE < topics.total) { topics.offset += PAGE; refreshTopics().catch(showError); } });

poll(refreshOverview, POLL_MS);
poll(refreshClusters, POLL_MS);
poll(refreshStats, POLL_MS);
poll(refreshKv, 10 * POLL_MS);
watchController();
refreshTopics().catch(showError);
connectEvents();
