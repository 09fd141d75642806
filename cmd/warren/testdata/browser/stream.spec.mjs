// Drives warren console in headless Chromium to a stream consumer's row
// and reads its place in its stream off the page: first nothing stored,
// then, once the consumer ran, its lag at the tail. Run by
// console_browser_test.go (TestConsoleStreamLagInTheBrowser), which runs
// the consumer when this script prints "waiting for the consumer". It
// exits non-zero on the first failed expectation.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const env = (k) => {
  if (!process.env[k]) throw new Error("missing environment variable " + k);
  return process.env[k];
};
const url = env("CONSOLE_URL"), consumer = env("CONSUMER"), stream = env("STREAM"), tail = env("TAIL");

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
  await lag.filter({ hasText: "tail " + tail }).waitFor();
  const before = await lag.textContent();
  expect(before === `stream ${stream}: nothing stored yet, tail ${tail}`, `the row says nothing is stored yet: "${before}"`);

  console.log("waiting for the consumer");
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line === "consumer ran") break;
  }
  await lag.filter({ hasText: "lag 0" }).waitFor();
  const after = await lag.textContent();
  expect(after === `stream ${stream}: lag 0 · stored ${tail}, tail ${tail}`, `the row shows the consumer at the tail: "${after}"`);
  expect((await lag.getAttribute("title")).includes("offset-tracking records"), "the lag says what it counts");
} catch (e) {
  console.error(e);
  failed = true;
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
