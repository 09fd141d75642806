// Drives warren console in headless Chromium to the row of a consumer of
// a super stream, once the consumer read every fact, and reads its lag
// off the page: the sum over the partitions, then each partition on a
// line of its own, at its tail. Run by console_browser_test.go
// (TestConsoleSuperStreamLagInTheBrowser). It exits non-zero on the first
// failed expectation.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const env = (k) => {
  if (!process.env[k]) throw new Error("missing environment variable " + k);
  return process.env[k];
};
const url = env("CONSOLE_URL"), consumer = env("CONSUMER"), stream = env("STREAM"), partitions = Number(env("PARTITIONS"));

function expect(ok, what) {
  if (!ok) throw new Error("expected " + what);
  console.log("ok: " + what);
}

const profile = mkdtempSync(join(tmpdir(), "warren-console-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1400, height: 900 },
});
let failed = false;
try {
  const page = context.pages()[0] || await context.newPage();
  await page.goto(url);
  const lag = page.locator(`#figures tr[data-consumer="${consumer}"] .stream-lag`);
  await lag.filter({ hasText: `lag 0 in ${partitions} partitions` }).waitFor();
  const first = await lag.evaluate((e) => e.firstChild.textContent);
  expect(first === `super stream ${stream}: lag 0 in ${partitions} partitions`, `the row sums the partitions' lags: "${first}"`);
  const lines = await lag.locator(".stream-partition").allTextContents();
  expect(lines.length === partitions, `a line per partition: ${JSON.stringify(lines)}`);
  lines.forEach((line, i) => {
    const m = new RegExp(`^${stream}-${i}: lag 0 · (?:stored (\\d+), tail (\\d+)|nothing stored yet, holds no fact)$`).exec(line);
    expect(m && m[1] === m[2], `partition ${i} at its tail: "${line}"`);
  });
} catch (e) {
  console.error(e);
  failed = true;
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
