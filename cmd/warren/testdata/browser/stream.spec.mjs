// Drives warren console in headless Chromium to a stream consumer's row
// and reads its place in its stream off the page: first nothing stored,
// with every fact of the stream to read (it starts at the first, offset
// 0), then, once the consumer ran, its lag at the tail. Run by
// console_browser_test.go (TestConsoleStreamLagInTheBrowser), which runs
// the consumer when this script prints "waiting for the consumer". It
// exits non-zero on the first failed expectation.
import { env, expect, onPage } from "./chromium.mjs";
import { createInterface } from "node:readline";

const url = env("CONSOLE_URL"), consumer = env("CONSUMER"), stream = env("STREAM"), tail = env("TAIL");

await onPage(async (page) => {
  await page.goto(url);
  const lag = page.locator(`#figures tr[data-consumer="${consumer}"] .stream-lag`);
  await lag.filter({ hasText: "tail " + tail }).waitFor();
  const before = await lag.textContent();
  expect(before === `stream ${stream}: lag ${Number(tail) + 1} · nothing stored yet, tail ${tail}`, `the row says nothing is stored yet, every fact to read: "${before}"`);

  console.log("waiting for the consumer");
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line === "consumer ran") break;
  }
  await lag.filter({ hasText: "lag 0" }).waitFor();
  const after = await lag.textContent();
  expect(after === `stream ${stream}: lag 0 · stored ${tail}, tail ${tail}`, `the row shows the consumer at the tail: "${after}"`);
  expect((await lag.getAttribute("title")).includes("offset-tracking records"), "the lag says what it counts");
});
