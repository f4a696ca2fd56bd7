import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commitAtProvider, createDoubleWorld, type DispatchedCall, dispatchWrite, type DoubleWorld, reconnectDriver } from "./kit/index.js";
import { consoleAssetsBuilt, consoleAssetsStale } from "@mosoo/operator-console";
import { launchBrowser, screenshot, serveConsoleApi, signIn } from "./helpers/console-browser.js";

/**
 * The operator console in a real headless Chromium (`@sparticuz/chromium` + puppeteer-core)
 * against the real API (in-process, on a loopback port) over a seeded store: one browser and one
 * API for the whole file, one fresh browser context (cookie jar) per operator.
 */
// Browser globals, used only inside callbacks that run in the page (this project is type-checked without the DOM lib).
declare const document: any;
declare const window: any;

/** One operator credential per name (every scope): the session, and so the audit actor, is the credential's. */
const TOKENS = {
  alice: "alice-token-console-0123456789",
  bob: "bob-token-console-0123456789",
  carol: "carol-token-console-0123456789",
};
const XSS_TOOL = `<img src=x onerror="window.__xss='tool'">createIssue<script>window.__xss='tool-script'</script>`;
const XSS_TEXT = `<script>window.__xss='result'</script><img src=x onerror="window.__xss='img'">`;
const WAIT = { timeout: 20_000 };

let fx: DoubleWorld;
let api: { url: string; close(): Promise<void> };
let chrome: { browser: Browser; close(): Promise<void> };
const seeded: Record<"manual" | "stale" | "lookup" | "xss" | "attention" | "neverSent", DispatchedCall> = {} as never;
const dialogs: string[] = [];

/** A write fenced `unknown` the way production does it: claimed, then its Driver restarted and the redelivered claim fenced it. */
async function unknownEffect(opts: { serverId?: string; toolName?: string; args?: Record<string, unknown>; commit?: boolean } = {}) {
  const call = await dispatchWrite(fx, opts);
  if (opts.commit) {
    // The provider committed, then the response was lost: fenced without the inline lookup of a redelivery.
    await commitAtProvider(fx, call);
    await fx.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      reason: "transport closed",
    });
    return call;
  }
  const restarted = await reconnectDriver(fx.runtime, call.driver);
  await fx.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
  expect((await fx.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId)).kind).toBe("unknown");
  return call;
}

/** A new operator: a fresh browser context (its own cookies), every JS dialog recorded (an XSS would `alert`). */
async function operatorTab(): Promise<Page> {
  const context = await chrome.browser.createBrowserContext();
  const page = await context.newPage();
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  return page;
}

const text = (page: Page, selector: string) => page.$eval(selector, (el) => el.textContent ?? "");

beforeAll(async () => {
  if (!consoleAssetsBuilt() || consoleAssetsStale())
    throw new Error("the console's assets are missing or older than packages/operator-console/web: run npm run build:console");
  fx = createDoubleWorld();
  // Unbound server "mail": only a manual resolution can settle these.
  seeded.manual = await unknownEffect({ serverId: "mail", toolName: "sendMail", args: { to: "ops@example.com", subject: XSS_TEXT } });
  fx.clock.advance(60_000);
  seeded.stale = await unknownEffect({ serverId: "mail", toolName: "sendMail" });
  seeded.xss = await unknownEffect({ serverId: "mail", toolName: XSS_TOOL, args: { title: XSS_TEXT } });
  seeded.attention = await unknownEffect({ serverId: "mail", toolName: "sendMail" });
  // Seeded directly: reaching the lookup bound takes many lookups; the console only reads this column.
  fx.store.sqlite
    .prepare("UPDATE external_tool_effects SET operator_attention = 'lookup_bound_reached' WHERE id = ?")
    .run(seeded.attention.effectId);
  // Bound to the provider double, which committed the write: "look up now" can prove it.
  seeded.lookup = await unknownEffect({ commit: true });
  // One lookup already recorded for the outcome chart: a redelivered write the provider never saw is
  // looked up inline, and the provider fences its key (confirmed not executed).
  const neverSent = await dispatchWrite(fx);
  seeded.neverSent = neverSent;
  const restarted = await reconnectDriver(fx.runtime, neverSent.driver);
  await fx.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
  expect((await fx.runtime.ledger.claim(restarted.instance, restarted.connectionId, neverSent.commandId)).kind).toBe("not_executed");
  api = await serveConsoleApi(fx.runtime, TOKENS);
  chrome = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await chrome?.close();
  await api?.close();
  fx?.close();
});

describe("operator console in a real browser", { timeout: 60_000 }, () => {
  it("a missing or wrong token reaches no page and no action", async () => {
    const page = await operatorTab();
    await page.goto(`${api.url}/console`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    await page.goto(`${api.url}/console/effects/${seeded.manual.effectId}`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    await screenshot(page, "sign-in");
    const probes = await page.evaluate(async (id: string) => {
      const get = (p: string) => fetch(p).then((r) => r.status);
      const post = (p: string) =>
        fetch(p, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ outcome: "not_executed", reason: "x" }),
        }).then((r) => r.status);
      return [
        await get("/console/api/effects"),
        await get(`/console/api/effects/${id}`),
        await get("/console/api/events"),
        await get("/console/assets/console.js"),
        await post(`/console/api/effects/${id}/resolve`),
      ];
    }, seeded.manual.effectId);
    expect(probes).toEqual([401, 401, 401, 401, 401]);
    await signIn(page, api.url, "not-the-operator-token");
    expect(new URL(page.url()).pathname).toBe("/console/session");
    expect(await text(page, "[role=alert]")).toContain("the operator token is not valid");
    expect(await page.cookies()).toEqual([]);
    await page.goto(`${api.url}/console`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    expect((await fx.runtime.operator.show(seeded.manual.effectId)).status).toBe("unknown");
    await page.browserContext().close();
  });

  it("signs in, lists the unknown effects with counts by reason, filters and charts", async () => {
    const page = await operatorTab();
    await signIn(page, api.url, TOKENS.alice);
    expect(new URL(page.url()).pathname).toBe("/console");
    // the header names the credential the token belongs to, and its scopes
    await page.waitForSelector(".who-name", WAIT);
    expect(await text(page, ".who-name")).toBe("alice");
    expect(await text(page, ".who-scopes")).toBe("(read, reconcile, resolve, compensate)");
    const [cookie] = await page.cookies();
    expect(cookie).toMatchObject({ name: "mosoo_console_session", httpOnly: true, sameSite: "Strict", path: "/console" });
    await page.waitForSelector(`tr[data-effect-id="${seeded.manual.effectId}"]`, WAIT);
    await page.waitForSelector("[data-testid=chart-lookups]", WAIT);
    const counts = await text(page, "[data-testid=counts]");
    expect(counts).toContain("5 unknown in all");
    expect(counts).toMatch(/1\s*lookup_bound_reached/);
    expect(await text(page, "[data-testid=chart-lookups]")).toContain("confirmed_not_executed");
    await page.waitForFunction(() => document.querySelector(".live")?.textContent?.includes("on"), WAIT);
    await screenshot(page, "list");
    // Filter by attention reason, from the keyboard.
    await page.focus("select[name=attention]");
    await page.select("select[name=attention]", "lookup_bound_reached");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.waitForFunction(
      (id: string) => document.querySelectorAll("tbody tr").length === 1 && !!document.querySelector(`tr[data-effect-id="${id}"]`),
      WAIT,
      seeded.attention.effectId,
    );
    expect(new URL(page.url()).search).toBe("?attention=lookup_bound_reached");
    await page.browserContext().close();
  });

  it("finds an effect of any status by its tool call id (status filter)", async () => {
    const { toolCallId, status } = await fx.runtime.operator.show(seeded.neverSent.effectId);
    expect(status).toBe("not_executed");
    const page = await operatorTab();
    await signIn(page, api.url, TOKENS.alice);
    await page.waitForSelector(`tr[data-effect-id="${seeded.manual.effectId}"]`, WAIT);
    // the default list (unknown only) does not show it
    expect(await page.$(`tr[data-effect-id="${seeded.neverSent.effectId}"]`)).toBeNull();
    await page.select("select[name=status]", "any");
    await page.type("input[name=toolCallId]", toolCallId);
    await page.click("form.filters button[type=submit]");
    await page.waitForFunction(
      (id: string) => document.querySelectorAll("tbody tr").length === 1 && !!document.querySelector(`tr[data-effect-id="${id}"]`),
      WAIT,
      seeded.neverSent.effectId,
    );
    expect(await text(page, "[data-testid=row-status]")).toBe("not_executed");
    expect(new URL(page.url()).searchParams.get("toolCallId")).toBe(toolCallId);
    // a status filter alone narrows the whole list
    await page.goto(`${api.url}/console?status=not_executed`);
    await page.waitForSelector(`tr[data-effect-id="${seeded.neverSent.effectId}"]`, WAIT);
    expect(await page.$(`tr[data-effect-id="${seeded.manual.effectId}"]`)).toBeNull();
    await page.browserContext().close();
  });

  it("opens an effect's timeline, looks it up now, and the adapter's proof settles it", async () => {
    fx.clock.advance(5 * 60_000); // the API's clock: the chart's samples get distinct times
    const page = await operatorTab();
    await signIn(page, api.url, TOKENS.alice);
    await page.waitForSelector(`tr[data-effect-id="${seeded.lookup.effectId}"] a`, WAIT);
    await page.click(`tr[data-effect-id="${seeded.lookup.effectId}"] a`);
    await page.waitForSelector("[data-testid=timeline]", WAIT);
    expect(new URL(page.url()).pathname).toBe(`/console/effects/${seeded.lookup.effectId}`);
    const timeline = await text(page, "[data-testid=timeline]");
    expect(timeline).toContain("Intent written");
    expect(timeline).toContain(`Connection ${seeded.lookup.driver.connectionId}`);
    expect(timeline).toContain("Attempt 1: unknown");
    expect(timeline).toContain("Command:");
    expect(timeline).toContain("Run: active");
    await screenshot(page, "effect-unknown");
    const button = await page.waitForSelector("::-p-text(Look up now)", WAIT);
    await button!.click();
    await page.waitForSelector("dialog[open]", WAIT);
    expect(await text(page, "dialog[open] h2")).toContain(seeded.lookup.effectId);
    expect(await text(page, "#confirm-what")).toContain("Nothing is sent to the provider as a write");
    await page.type("#confirm-reason", "customer asked whether the issue exists");
    await page.click("dialog[open] button[type=submit]");
    await page.waitForFunction(() => document.querySelector("[data-testid=status]")?.textContent === "succeeded", WAIT);
    expect(await text(page, "[data-testid=notice]")).toContain("confirmed_succeeded");
    const after = await text(page, "[data-testid=timeline]");
    expect(after).toMatch(/Lookup \(operator\): confirmed_succeeded/);
    expect(after).toContain("Operator lookup by alice: confirmed_succeeded");
    await screenshot(page, "effect-timeline");
    expect(await fx.runtime.operator.show(seeded.lookup.effectId)).toMatchObject({ status: "succeeded", resolution: "reconciled" });
    await page.browserContext().close();
  });

  it("resolves an effect as succeeded behind a confirmation; the audit row shows and another tab's list updates without a reload", async () => {
    fx.clock.advance(5 * 60_000); // the API's clock: the chart's samples get distinct times
    const lister = await operatorTab();
    await signIn(lister, api.url, TOKENS.bob);
    await lister.waitForSelector(".who-name", WAIT);
    expect(await text(lister, ".who-name")).toBe("bob");
    await lister.waitForSelector(`tr[data-effect-id="${seeded.manual.effectId}"]`, WAIT);
    await lister.waitForFunction(() => document.querySelector(".live")?.textContent?.includes("on"), WAIT);
    await lister.evaluate(() => ((window as unknown as { __sameDocument: boolean }).__sameDocument = true));

    const page = await operatorTab();
    await signIn(page, api.url, TOKENS.alice);
    await page.goto(`${api.url}/console/effects/${seeded.manual.effectId}`);
    await (await page.waitForSelector("::-p-text(Resolve as succeeded)", WAIT))!.click();
    await page.waitForSelector("dialog[open] #confirm-result", WAIT);
    expect(await text(page, "#confirm-what")).toContain(`Effect ${seeded.manual.effectId} (sendMail on mail) is marked succeeded`);
    await page.$eval("#confirm-result", (el) => ((el as unknown as { value: string }).value = ""));
    await page.type(
      "#confirm-result",
      JSON.stringify({ content: [{ type: "text", text: `sent ${"<script>window.__xss='resolved'</script>"}` }] }),
    );
    await page.type("#confirm-op", "msg-4411");
    await page.type("#confirm-reason", "found the mail in the provider's sent folder");
    await screenshot(page, "confirm-resolve");
    await page.click("dialog[open] button[type=submit]");
    await page.waitForFunction(() => document.querySelector("[data-testid=status]")?.textContent === "succeeded", WAIT);
    const timeline = await text(page, "[data-testid=timeline]");
    expect(timeline).toContain("Operator resolve by alice: succeeded");
    expect(timeline).toContain("found the mail in the provider's sent folder");
    expect(timeline).toContain("msg-4411");
    expect(await text(page, "[data-testid=result]")).toContain("<script>window.__xss='resolved'</script>");
    await screenshot(page, "effect-resolved");

    // The other operator's list drops the effect by itself (server-sent event), in the same document.
    await lister.waitForFunction((id: string) => !document.querySelector(`tr[data-effect-id="${id}"]`), WAIT, seeded.manual.effectId);
    expect(await lister.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
    expect((await fx.runtime.operator.show(seeded.manual.effectId)).operatorActions).toMatchObject([
      { action: "resolve", actor: "alice", outcome: "succeeded" },
    ]);
    await lister.browserContext().close();
    await page.browserContext().close();
  });

  it("a second tab's stale resolution shows that someone else settled the effect first, and changes nothing", async () => {
    fx.clock.advance(5 * 60_000); // the API's clock: the chart's samples get distinct times
    const stale = await operatorTab();
    await signIn(stale, api.url, TOKENS.carol);
    await stale.goto(`${api.url}/console/effects/${seeded.stale.effectId}`);
    await (await stale.waitForSelector("::-p-text(Resolve as not executed)", WAIT))!.click();
    await stale.waitForSelector("dialog[open] #confirm-reason", WAIT);
    await stale.type("#confirm-reason", "the provider has no such mail");

    const first = await operatorTab();
    await signIn(first, api.url, TOKENS.alice);
    await first.goto(`${api.url}/console/effects/${seeded.stale.effectId}`);
    await (await first.waitForSelector("::-p-text(Resolve as succeeded)", WAIT))!.click();
    await first.waitForSelector("dialog[open] #confirm-reason", WAIT);
    await first.type("#confirm-reason", "the mail is in the sent folder");
    await first.click("dialog[open] button[type=submit]");
    await first.waitForFunction(() => document.querySelector("[data-testid=status]")?.textContent === "succeeded", WAIT);

    // The stale dialog stays open and, once the live update arrives, says the effect changed;
    // its confirmation is then refused and explained.
    await stale.waitForFunction(() => document.querySelector("dialog[open] .warning")?.textContent?.includes("it is now succeeded"), WAIT);
    await stale.click("dialog[open] button[type=submit]");
    await stale.waitForSelector("[data-testid=confirm-error]", WAIT);
    const message = await text(stale, "[data-testid=confirm-error]");
    expect(message).toContain("Someone else settled this effect first: it is now succeeded");
    expect(message).toContain("effect.not_unknown");
    expect(await stale.$("dialog[open] button[type=submit]")).toBeNull();
    await screenshot(stale, "conflict");
    const shown = await fx.runtime.operator.show(seeded.stale.effectId);
    expect(shown).toMatchObject({ status: "succeeded", resolution: "operator" });
    expect(shown.operatorActions.map((a) => a.actor)).toEqual(["alice"]);
    await stale.browserContext().close();
    await first.browserContext().close();
  });

  it("provider- and agent-supplied strings stay inert text (tool name, arguments, result): no script runs, no element is injected", async () => {
    fx.clock.advance(5 * 60_000); // the API's clock: the chart's samples get distinct times
    const page = await operatorTab();
    await signIn(page, api.url, TOKENS.alice);
    await page.waitForSelector(`tr[data-effect-id="${seeded.xss.effectId}"]`, WAIT);
    expect(await text(page, `tr[data-effect-id="${seeded.xss.effectId}"]`)).toContain(XSS_TOOL);
    await page.goto(`${api.url}/console/effects/${seeded.xss.effectId}`);
    await page.waitForSelector("[data-testid=timeline]", WAIT);
    expect(await text(page, "[data-testid=tool]")).toBe(XSS_TOOL);
    expect(await page.$eval("[data-testid=arguments]", (el) => el.textContent)).toContain(XSS_TEXT.replace(/"/g, '\\"'));
    // Resolve it with a result carrying the probe as well, then read it back.
    await (await page.waitForSelector("::-p-text(Resolve as succeeded)", WAIT))!.click();
    await page.waitForSelector("dialog[open] #confirm-result", WAIT);
    await page.$eval("#confirm-result", (el) => ((el as unknown as { value: string }).value = ""));
    await page.type("#confirm-result", JSON.stringify({ content: [{ type: "text", text: XSS_TEXT }], _meta: { receipt: XSS_TEXT } }));
    await page.type("#confirm-op", XSS_TEXT.slice(0, 200));
    await page.type("#confirm-reason", XSS_TEXT);
    await page.click("dialog[open] button[type=submit]");
    await page.waitForFunction(() => document.querySelector("[data-testid=status]")?.textContent === "succeeded", WAIT);
    await page.reload();
    await page.waitForSelector("[data-testid=provider-receipt]", WAIT);
    expect(await text(page, "[data-testid=provider-receipt]")).toContain("<script>");
    const probe = await page.evaluate(() => ({
      xss: (window as unknown as { __xss?: string }).__xss ?? null,
      scripts: [...document.scripts].map((s: { src: string }) => s.src),
      images: document.images.length,
      onerror: document.querySelectorAll("[onerror]").length,
    }));
    expect(probe).toEqual({ xss: null, scripts: [`${api.url}/console/assets/console.js`], images: 0, onerror: 0 });
    expect(dialogs).toEqual([]);
    await screenshot(page, "xss-inert");
    await page.browserContext().close();
  });

  it("is keyboard-operable with labelled controls, and reflows at 200% zoom without horizontal scrolling", async () => {
    const page = await operatorTab();
    await signIn(page, api.url, TOKENS.alice);
    await page.waitForSelector("tbody tr a", WAIT);
    const unlabelled = await page.evaluate(
      () =>
        [...document.querySelectorAll("input:not([type=hidden]), select, textarea, button")].filter((el: any) => {
          const c = el as { labels?: { length: number }; getAttribute(n: string): string | null };
          return !(c.labels?.length || c.getAttribute("aria-label") || (el.tagName === "BUTTON" && el.textContent?.trim()));
        }).length,
    );
    expect(unlabelled).toBe(0);
    // Tab to the first effect link and open it with Enter.
    let focused = "";
    for (let i = 0; i < 40 && !focused.startsWith("/console/effects/"); i++) {
      await page.keyboard.press("Tab");
      focused = await page.evaluate(() => document.activeElement?.getAttribute("href") ?? "");
    }
    expect(focused).toMatch(/^\/console\/effects\//);
    await screenshot(page, "list-after-actions");
    await page.keyboard.press("Enter");
    await page.waitForSelector("[data-testid=timeline]", WAIT);
    // 200% zoom: a 640 CSS px wide viewport at device scale 2.
    await page.setViewport({ width: 640, height: 900, deviceScaleFactor: 2 });
    await page.goto(`${api.url}/console`);
    await page.waitForSelector("tbody tr", WAIT);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, "list-zoom-200");
    await page.browserContext().close();
  });

  it("links to the API reference, rendered from the API's own OpenAPI document", async () => {
    const page = await operatorTab();
    await signIn(page, api.url, TOKENS.alice);
    await page.waitForSelector("a.reference-link", WAIT);
    await page.click("a.reference-link");
    await page.waitForSelector("tr[data-operation-id=enqueueToolCall]", WAIT);
    expect(new URL(page.url()).pathname).toBe("/console/reference");
    const doc = (await (await fetch(`${api.url}/openapi.json`)).json()) as { paths: Record<string, object> };
    const operations = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).filter((k) => k !== "parameters").length, 0);
    expect(await page.$$eval("[data-testid=api-reference] tbody tr", (rows) => rows.length)).toBe(operations);
    expect(await text(page, "tr[data-operation-id=enqueueToolCall]")).toContain("runs:write");
    // a reload of the page's own address serves the app, not a 404
    await page.reload();
    await page.waitForSelector("tr[data-operation-id=enqueueToolCall]", WAIT);
    await page.browserContext().close();
  });

  it("signing out ends the session: the old cookie reaches nothing", async () => {
    const page = await operatorTab();
    await signIn(page, api.url, TOKENS.alice);
    await page.waitForSelector("form.sign-out button", WAIT);
    const [cookie] = await page.cookies();
    await Promise.all([page.waitForNavigation(), page.click("form.sign-out button")]);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    const res = await fetch(`${api.url}/console/api/effects`, { headers: { cookie: `mosoo_console_session=${cookie!.value}` } });
    expect(res.status).toBe(401);
    await page.browserContext().close();
  });
});
