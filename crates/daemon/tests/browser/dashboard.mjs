// Drives headless Chromium (Debian's, through playwright-core) over the dashboard for
// crates/daemon/tests/dashboard_browser.rs, which runs the server and asserts on what this
// prints. Protocol on stdout: one JSON object per line; after {"step":"ready"} it waits for a
// line on stdin (the test has registered a broker) before looking for the live event.
//
// usage: node dashboard.mjs <url> <screenshot.png> <chromium> <overdue-broker-addr> <topic> <new-broker-addr>
import { chromium } from "playwright-core";
import { createInterface } from "node:readline";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [url, screenshot, executablePath, overdueAddr, topic, newAddr] = process.argv.slice(2);
const WAIT_MS = 30_000;
const say = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once("line", resolve));

const profile = mkdtempSync(join(tmpdir(), "namesrv-dashboard-"));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1400, height: 1100 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const errors = [];
try {
  const page = browser.pages()[0] || (await browser.newPage());
  page.on("console", (msg) => { if (msg.type() === "error") errors.push(`console: ${msg.text()}`); });
  page.on("pageerror", (err) => errors.push(`page error: ${err.message}`));
  page.on("requestfailed", (req) => {
    // The event stream is cut when the page closes; anything else failing is an error.
    if (!req.url().includes("/api/v1/events/stream")) errors.push(`request failed: ${req.url()}`);
  });
  await page.goto(url, { waitUntil: "load" });

  // The charts as the first answer of /api/v1/stats draws them (the server's history).
  await page.waitForSelector("#rate-chart[data-points]", { timeout: WAIT_MS });
  const firstPaint = await page.evaluate(() => {
    const chart = (id) => {
      const svg = document.getElementById(id);
      return {
        points: Number(svg.dataset.points),
        lines: Array.from(svg.querySelectorAll("polyline"), (l) => l.getAttribute("points").trim().split(/\s+/).filter(Boolean).length),
        note: svg.parentElement.querySelector(".chart-note").textContent,
      };
    };
    return { rate: chart("rate-chart"), latency: chart("latency-chart"), rateNow: document.getElementById("rate-now").textContent };
  });

  // The controller panel, once the node's report is in.
  await page.waitForSelector("#controller-groups tr[data-group]", { timeout: WAIT_MS });
  const controller = await page.evaluate(() => ({
    role: document.querySelector("#controller-summary [data-role]").dataset.role,
    leader: document.querySelector("#controller-summary [data-leader]").dataset.leader,
    term: document.querySelector("#controller-summary [data-term]").dataset.term,
    groups: Array.from(document.querySelectorAll("#controller-groups tr[data-group]"), (r) => ({
      name: r.dataset.group,
      master: r.dataset.master,
      alive: r.cells[3].textContent,
      syncStateSet: r.cells[5].textContent,
    })),
  }));
  const kvEmpty = await page.textContent("#kv-list li.empty", { timeout: WAIT_MS });

  // The broker rows, once the overdue broker shows as overdue.
  await page.waitForSelector(`#brokers tr[data-addr="${overdueAddr}"][data-state="overdue"]`, { timeout: WAIT_MS });
  // ... and every state badge has its computed style (Chromium answers "" for a badge it has not
  // styled yet, e.g. right after a re-render).
  await page.waitForFunction(() => Array.from(document.querySelectorAll("#brokers tbody tr")).every((r) => {
    const badge = r.querySelector(".state");
    return badge !== null && getComputedStyle(badge).backgroundColor !== "";
  }), null, { timeout: WAIT_MS });
  const brokers = await page.$$eval("#brokers tbody tr", (rows) => rows.map((r) => ({
    addr: r.dataset.addr,
    cluster: r.dataset.cluster,
    group: r.dataset.group,
    state: r.dataset.state,
    badge: r.querySelector(".state").textContent,
    colour: getComputedStyle(r.querySelector(".state")).backgroundColor,
  })));
  const total = await page.textContent("#topic-total");

  // Search for the topic by a prefix, choose it, read its route.
  await page.fill("#topic-search", topic.slice(0, -1));
  await page.waitForSelector(`#topic-list li[data-topic="${topic}"]`, { timeout: WAIT_MS });
  const listed = await page.$$eval("#topic-list li", (items) => items.map((li) => li.dataset.topic));
  await page.click(`#topic-list li[data-topic="${topic}"]`);
  await page.waitForSelector(`#route h3[data-route="${topic}"]`, { timeout: WAIT_MS });
  const route = {
    brokers: await page.$$eval("#route-brokers tbody tr", (rows) => rows.map((r) => ({ name: r.dataset.broker, addr: r.dataset.addr }))),
    queues: await page.$$eval("#route-queues tbody tr", (rows) => rows.map((r) => Array.from(r.cells, (c) => c.textContent))),
  };
  await page.waitForSelector("#events-status:text('live')", { timeout: WAIT_MS });

  say({ step: "ready" });
  await nextLine();
  const event = await page.waitForSelector(`#events li[data-kind="broker_registered"][data-addr="${newAddr}"]`, { timeout: WAIT_MS });
  const eventText = await event.textContent();
  // The broker list follows the event.
  await page.waitForSelector(`#brokers tr[data-addr="${newAddr}"]`, { timeout: WAIT_MS });
  await page.screenshot({ path: screenshot, fullPage: true });
  say({ step: "done", firstPaint, controller, kvEmpty, brokers, total, listed, route, eventText, errors });
} catch (e) {
  say({ step: "failed", error: String(e && e.stack || e), errors });
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
  lines.close();
}
