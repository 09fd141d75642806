// What every console script shares: its settings from the environment,
// expectations that print what held, and a page in Debian's headless
// Chromium with the flags that work on a machine with no network beyond
// localhost (without the background-networking ones, Chromium's own
// connections are refused, many at a time).
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const env = (k) => {
  if (!process.env[k]) throw new Error("missing environment variable " + k);
  return process.env[k];
};

export function expect(ok, what) {
  if (!ok) throw new Error("expected " + what);
  console.log("ok: " + what);
}

// onPage runs drive with a fresh page of a fresh profile, then closes the
// browser, removes the profile and exits: non-zero when drive threw, on
// the first failed expectation.
export async function onPage(drive) {
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
    await drive(context.pages()[0] || await context.newPage());
  } catch (e) {
    failed = true;
    console.error("FAIL: " + (e && e.message ? e.message : e));
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}
