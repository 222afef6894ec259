// Opens the dashboard of a server with authenticationMode=all for
// crates/daemon/tests/dashboard_browser.rs: once without credentials (the answer must be 401
// with a Basic challenge) and once with HTTP Basic credentials (the page must render its broker
// rows, every request of the page answered, no console error). Prints one JSON
// object on stdout.
//
// usage: node basic.mjs <url> <chromium> <accessKey> <secretKey>
import { chromium } from "playwright-core";

const [url, executablePath, username, password] = process.argv.slice(2);
const WAIT_MS = 30_000;
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
const result = { errors: [] };
try {
  // Without credentials a page navigation would wait for the login prompt: ask as a fetch.
  const anonymous = await browser.newContext();
  const first = await anonymous.request.get(url);
  result.anonymousStatus = first.status();
  result.challenge = first.headers()["www-authenticate"] || null;
  await anonymous.close();

  const context = await browser.newContext({ httpCredentials: { username, password } });
  const page = await context.newPage();
  // Without an embedded controller /api/v1/controller is 404 (the panel stays hidden); any
  // other failed answer, 401 above all, is an error.
  const expected = (status, where) => status === 404 && where.includes("/api/v1/controller");
  page.on("console", (msg) => {
    const where = msg.location().url || "";
    if (msg.type() === "error" && !expected(404, where)) result.errors.push(`console: ${msg.text()}`);
  });
  page.on("pageerror", (err) => result.errors.push(`page error: ${err.message}`));
  page.on("response", (res) => {
    if (res.status() >= 400 && !expected(res.status(), res.url())) result.errors.push(`${res.status()} ${res.url()}`);
  });
  const answer = await page.goto(url, { waitUntil: "load" });
  result.status = answer.status();
  await page.waitForFunction(() => document.querySelectorAll("#brokers tbody tr[data-addr]").length > 0, null, { timeout: WAIT_MS });
  result.brokers = await page.$$eval("#brokers tbody tr[data-addr]", (rows) => rows.map((r) => r.dataset.addr));
  await context.close();
} catch (e) {
  result.errors.push(`driver: ${e.message}`);
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(result) + "\n");
