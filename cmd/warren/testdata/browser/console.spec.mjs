// Drives warren console in headless Chromium through what an operator
// does: see the poison lane on the overview, read it, try an action
// without the token, replay one message, discard one with a reason, and
// check that markup in messages shows as text. Run by
// console_browser_test.go, which seeds the broker and checks the broker's
// side; this script checks the page. It exits non-zero on the first
// failed expectation.
import { env, expect, onPage } from "./chromium.mjs";

const url = env("CONSOLE_URL"), consumer = env("CONSUMER");
const replayID = env("REPLAY_ID"), discardID = env("DISCARD_ID"), xssID = env("XSS_ID");
const poisonCount = Number(env("POISON_COUNT"));
const groupID = env("GROUP_ID"), editID = env("EDIT_ID"), editedPayload = env("EDITED_PAYLOAD");

await onPage(async (page) => {
  const dialogs = [];
  page.on("dialog", (d) => { dialogs.push(d.message()); d.dismiss(); });
  const offsite = [];
  page.on("request", (r) => { if (!r.url().startsWith(new URL(url).origin)) offsite.push(r.url()); });

  // Overview: the lane stands out with its poison depth.
  await page.goto(url);
  const row = page.locator(`#figures tr[data-consumer="${consumer}"]`);
  await row.locator("td.poison", { hasText: String(poisonCount) }).waitFor();
  expect(await row.evaluate((r) => r.classList.contains("alert")), `the row of ${consumer} stands out with poison ${poisonCount}`);
  expect((await row.locator(".alert-text").textContent()).includes("poison waiting"), "the row says why");
  expect(await page.evaluate(() => location.hash === ""), "the token is taken out of the address bar");
  expect((await page.locator("#unshown").textContent()).includes("redelivery rate"), "the page says which figure it cannot show");
  await page.waitForFunction(() => document.querySelectorAll("#figures svg.chart polyline")[0]?.getAttribute("points").split(" ").length >= 2);
  expect(true, "the history chart has points");
  // The overview is read again every few seconds: the rows stay the same
  // elements, so that a click landing during a refresh is not lost.
  await row.evaluate((r) => { r.__kept = true; });
  const readBefore = await page.locator("#updated").textContent();
  await page.waitForFunction((b) => document.getElementById("updated").textContent !== b, readBefore);
  expect(await row.evaluate((r) => r.__kept === true), "a refresh keeps the row in place");
  // The outbox's schedule, beside the figures.
  const outbox = page.locator("#outbox tbody tr");
  await outbox.locator("td.scheduled", { hasText: env("OUTBOX_SCHEDULED") }).waitFor();
  expect(await page.locator("#later").isVisible(), "the facts for later are shown");
  expect(await page.locator("#delayed").isHidden(), "a topology without delay levels shows none");
  expect((await outbox.locator("td.next").textContent()).includes("(in "), "the outbox's next due time is shown with how far off it is");
  expect(await outbox.locator("td.pending").textContent() === env("OUTBOX_PENDING"), "the outbox's pending rows are counted apart from the scheduled ones");
  if (process.env.SCREENSHOT) {
    await page.waitForTimeout(Number(process.env.SCREENSHOT_WAIT || 0));
    await page.locator("body").screenshot({ path: process.env.SCREENSHOT });
    console.log("screenshot: " + process.env.SCREENSHOT);
  }

  // The poison lane.
  await row.locator("a.consumer").click();
  const messages = page.locator("#messages tr.message");
  await page.waitForFunction((n) => document.querySelectorAll("#messages tr.message").length === n, poisonCount);
  expect(true, `the lane lists ${poisonCount} messages`);

  // Markup in a payload, a failure or a header is text.
  for (const d of await page.locator("#messages details").all()) await d.evaluate((e) => { e.open = true; });
  const xss = page.locator(`#messages tr.message[data-id="${xssID}"]`);
  const xssDetail = xss.locator("xpath=following-sibling::tr[1]");
  expect((await xssDetail.locator("pre.payload").textContent()).includes("<script>window.__xss=1</script>"), "a <script> payload is shown as text");
  expect((await xss.locator("td.failure").textContent()).includes(`"><img src=x onerror=window.__xss=2>`), "an onerror failure is shown as text");
  expect((await xssDetail.locator("dl.headers").textContent()).includes(`"><img src=x onerror=window.__xss=2>`), "a header is shown as text");
  expect(await page.locator("#lane img, #overview img, script:not([src])").count() === 0, "no image or inline script element came from a message");
  await page.waitForTimeout(300);
  expect(await page.evaluate(() => window.__xss === undefined), "no payload ran");
  expect(dialogs.length === 0, "no dialog opened");

  // Filters.
  await page.fill("#filter-text", xssID);
  expect(await messages.count() === 1, "the text filter keeps only the matching message");
  await page.fill("#filter-text", "");
  await page.selectOption("#filter-key", "order.placed");
  expect(await messages.count() === poisonCount - 1, "the routing-key filter leaves out the one of another key");
  await page.selectOption("#filter-key", "");

  // Select all shown, then none.
  await page.check("#select-all");
  const enabled = await page.locator("#messages input.pick:not(:disabled)").count();
  expect(await page.locator("#messages input.pick:checked").count() === enabled && enabled === poisonCount,
    "all shown selects every message with an id");
  expect((await page.locator("#replay").textContent()).includes(`(${enabled})`), "the buttons say how many are selected");
  await page.uncheck("#select-all");
  expect(await page.locator("#messages input.pick:checked").count() === 0, "and unselects them");

  // Without the token the action is refused, and the page says so.
  const token = await page.evaluate(() => sessionStorage.getItem("warren-token"));
  await page.evaluate(() => sessionStorage.removeItem("warren-token"));
  await page.check(`#messages tr.message[data-id="${replayID}"] input.pick`);
  await page.click("#replay");
  await page.click("#confirm-yes");
  await page.locator("#result", { hasText: "Refused" }).waitFor();
  expect((await page.locator("#result").textContent()).includes("token"), "an action without the token is refused: " + await page.locator("#result").textContent());
  const direct = await page.evaluate(async (c) => (await fetch(`api/consumers/${c}/discard`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ ids: ["x"], reason: "r" }),
  })).status, consumer);
  expect(direct === 401, "a request without the token gets 401, got " + direct);
  expect(await messages.count() === poisonCount, "nothing was replayed");

  // Replay one message, after confirming.
  await page.fill("#token", token);
  await page.dispatchEvent("#token", "change");
  await page.click("#replay");
  expect((await page.locator("#confirm-text").textContent()).startsWith("Replay 1 message"), "replay asks for confirmation");
  await page.click("#confirm-yes");
  await page.locator("#result.done").waitFor();
  const replayed = await page.locator("#result").textContent();
  expect(replayed.includes(`replayed 1 message from ${consumer}.poison to ${consumer}`) && replayed.includes(replayID), "the page says what the replay did: " + replayed);
  await page.waitForFunction((n) => document.querySelectorAll("#messages tr.message").length === n, poisonCount - 1);
  expect(await page.locator(`#messages tr.message[data-id="${replayID}"]`).count() === 0, "the replayed message left the lane");

  // Discard one with a reason.
  await page.check(`#messages tr.message[data-id="${discardID}"] input.pick`);
  await page.click("#discard");
  await page.click("#confirm-yes");
  expect((await page.locator("#result").textContent()).includes("reason"), "a discard without a reason is not sent");
  await page.fill("#reason", "a test order, placed twice");
  await page.click("#confirm-yes");
  await page.locator("#result.done", { hasText: "discarded" }).waitFor();
  const discarded = await page.locator("#result").textContent();
  expect(discarded.includes(`discarded 1 message from ${consumer}.poison to ${consumer}.discarded`), "the page says what the discard did: " + discarded);
  await page.waitForFunction((n) => document.querySelectorAll("#messages tr.message").length === n, poisonCount - 2);
  expect(true, "the discarded message left the lane");

  // The causes: the lane grouped, a group exported and retried whole.
  await page.click("#tab-causes");
  const causes = page.locator("#causes tr.cause");
  await causes.first().waitFor();
  expect(await causes.count() === 4, "the lane's 5 messages fall in 4 causes, got " + await causes.count());
  const group = page.locator(`#causes tr.cause[data-group="${groupID}"]`);
  expect(await group.locator("td.count").textContent() === "2", "the group of two smtp timeouts counts 2");
  expect(await group.locator("td.keys").textContent() === "order.placed 2", "and names its routing key");
  expect((await group.locator("td.cause-text").textContent()) === "smtp timeout after <n> ms", "its cause is shown with the numbers masked, as text");
  expect((await page.locator("#causes").textContent()).includes(`"><img src=x onerror=window.__xss=<n>>`), "a cause with markup is shown as text");
  expect(await page.locator("#causes img").count() === 0, "no image element came from a cause");
  await group.locator("button.group-export").click();
  expect((await page.locator("#confirm-text").textContent()).startsWith("Export the 2 messages of group " + groupID), "an export asks for confirmation");
  await page.click("#confirm-yes");
  await page.locator("#result.done", { hasText: "exported" }).waitFor();
  expect((await page.locator("#result").textContent()).includes(`exported 2 messages of 2 in group ${groupID}`), "the page says what the export did");
  expect(await page.locator("#export-link").isVisible() && (await page.locator("#export-link").getAttribute("href")).startsWith("blob:"), "the export can be downloaded");
  await group.locator("button.group-retry").click();
  expect((await page.locator("#confirm-text").textContent()).startsWith("Retry the 2 messages of group " + groupID), "a group retry asks for confirmation");
  await page.click("#confirm-yes");
  await page.locator("#result.done", { hasText: "retried" }).waitFor();
  const retried = await page.locator("#result").textContent();
  expect(retried.includes(`retried 2 messages of 2 in group ${groupID} from ${consumer}.poison to ${consumer}`), "the page says what the group retry did: " + retried);
  await page.waitForFunction(() => document.querySelectorAll("#causes tr.cause").length === 3);
  expect(await group.count() === 0, "the retried group left the lane");

  // Edit one message: refused with the schema's error, then retried.
  await page.click("#tab-messages");
  await page.waitForFunction((n) => document.querySelectorAll("#messages tr.message").length === n, poisonCount - 4);
  const edit = page.locator(`#messages tr.message[data-id="${editID}"]`).locator("xpath=following-sibling::tr[1]");
  await edit.locator("details").evaluate((e) => { e.open = true; });
  expect((await edit.locator("textarea.edit-payload").inputValue()).includes('"order_id": "o-4"'), "the editor holds the payload");
  await edit.locator("textarea.edit-payload").fill('{"order_id": "<b>not a uuid</b>"}');
  await edit.locator("button.edit-send").click();
  await edit.locator(".edit-result.error").waitFor();
  const refused = await edit.locator(".edit-result").textContent();
  expect(refused.includes("does not match schema order/placed.json") && refused.includes("missing properties"), "an invalid payload is refused with the schema's error: " + refused);
  expect(await edit.locator(".edit-result b").count() === 0, "the error is shown as text");
  expect(await page.locator(`#messages tr.message[data-id="${editID}"]`).count() === 1, "nothing was sent");
  await edit.locator("textarea.edit-payload").fill(editedPayload);
  await edit.locator("button.edit-send").click();
  await page.locator("#result.done", { hasText: "edited" }).waitFor();
  expect((await page.locator("#result").textContent()).includes(`edited ${editID} (order.placed): retried to ${consumer}`), "the page says the edit was retried");
  await page.waitForFunction((n) => document.querySelectorAll("#messages tr.message").length === n, poisonCount - 5);
  expect(true, "the edited message left the lane");

  // Back on the overview, the figures follow.
  await page.click("#back");
  await row.locator("td.poison", { hasText: String(poisonCount - 5) }).waitFor();
  expect(true, "the overview shows the poison depth after the actions");

  // The other views render.
  await page.click('nav button[data-view="topology"]');
  expect(await page.locator("#topology img").evaluate((i) => i.complete && i.naturalWidth > 0), "the topology is drawn");
  await page.click('nav button[data-view="catalogue"]');
  await page.locator("#catalogue h3").first().waitFor();
  expect((await page.locator("#catalogue").textContent()).includes("order.placed"), "the catalogue shows the facts");
  await page.click('nav button[data-view="schemas"]');
  await page.locator("#schemas pre").first().waitFor();
  expect((await page.locator("#schemas").textContent()).includes('"x-routing-key"'), "the schemas are shown");
  // A saga's instances: the oldest running first, with its version and
  // its pending timeout and when due; the newest first when asked; the
  // instance's id, markup and all, shown as text.
  await page.click('nav button[data-view="overview"]');
  const sagaRow = page.locator(`#sagas tr[data-saga="${env("SAGA")}"]`);
  await sagaRow.locator("td.running", { hasText: "3" }).waitFor();
  await sagaRow.locator("a.saga").click();
  const instances = page.locator("#instances tr.instance");
  await page.waitForFunction(() => document.querySelectorAll("#instances tr.instance").length === 3);
  expect(true, "the saga's view lists its 3 running instances");
  const first = instances.first();
  expect(await first.getAttribute("data-instance") === env("SAGA_INSTANCE"), "the oldest running instance comes first: " + await first.getAttribute("data-instance"));
  expect(await first.locator("td.mono").first().textContent() === env("SAGA_INSTANCE"), "its id, markup and all, is shown as text");
  expect(await first.locator("td.state").textContent() === "running", "it is running");
  expect(await first.locator("td.version").textContent() === env("SAGA_VERSION"), "its version is shown");
  expect(/^6[01]m$/.test(await first.locator("td.age").textContent()), "its age (an hour) is shown: " + await first.locator("td.age").textContent());
  const timeout = first.locator(`.timeout[data-timeout="${env("SAGA_TIMEOUT")}"]`);
  expect(await timeout.locator(".timeout-name").textContent() === env("SAGA_TIMEOUT"), "its pending timeout is named");
  expect(await timeout.locator(".timeout-due").getAttribute("data-due") === env("SAGA_TIMEOUT_DUE"), "with when it is due: " + await timeout.locator(".timeout-due").getAttribute("data-due"));
  expect(/\(in 1[12][0-9]m\)$/.test(await timeout.locator(".timeout-due").textContent()), "and how far off (two hours): " + await timeout.locator(".timeout-due").textContent());
  expect((await page.locator("#saga-info").textContent()).includes("3 running instances"), "the page says how many: " + await page.locator("#saga-info").textContent());
  await page.selectOption("#saga-order", "newest");
  await page.waitForFunction((id) => document.querySelector("#instances tr.instance")?.dataset.instance === id, env("SAGA_OTHER"));
  expect(true, "newest first lists the newest running instance first");
  await page.selectOption("#saga-state", "completed");
  await page.waitForFunction(() => document.querySelectorAll("#instances tr.instance").length === 1);
  expect(await instances.first().getAttribute("data-instance") === "o-6" &&
    (await instances.first().locator("td.state").textContent()).startsWith("completed"), "the completed ones are listed apart");
  expect(await page.locator("#saga img").count() === 0, "no image element came from an instance");
  expect(await page.evaluate(() => window.__xss === undefined), "no instance id ran");
  await page.click("#saga-back");

  expect(offsite.length === 0, "nothing was requested from another site: " + offsite.join(", "));
});
