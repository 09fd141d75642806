// Drives warren console in headless Chromium to the row of a consumer of
// a super stream, once the consumer read every fact, and reads its lag
// off the page: the sum over the partitions, then each partition on a
// line of its own, at its tail. Run by console_browser_test.go
// (TestConsoleSuperStreamLagInTheBrowser). It exits non-zero on the first
// failed expectation.
import { env, expect, onPage } from "./chromium.mjs";

const url = env("CONSOLE_URL"), consumer = env("CONSUMER"), stream = env("STREAM"), partitions = Number(env("PARTITIONS"));

await onPage(async (page) => {
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
});
