import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve, type ServerType } from "@hono/node-server";
import chromium from "@sparticuz/chromium";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { buildHttpApp, operatorCredentials, type Runtime } from "../kit/index.js";

/**
 * Flags for headless Chromium on this closed network (no background connections, no sandbox as
 * root, no GPU). Deliberately not `@sparticuz/chromium`'s own `args`: those turn off web security
 * (`--disable-web-security`), which would defeat the CSP and same-origin checks under test.
 */
const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
  "--font-render-hinting=none",
];

/** A headless Chromium from the `@sparticuz/chromium` registry package (unpacked to the temp folder), with a fresh profile. */
export async function launchBrowser(): Promise<{ browser: Browser; close(): Promise<void> }> {
  const executablePath = await chromium.executablePath();
  const userDataDir = mkdtempSync(join(tmpdir(), "mosoo-console-profile-"));
  const browser = await puppeteer.launch({
    executablePath,
    headless: true,
    args: CHROMIUM_FLAGS,
    userDataDir,
    defaultViewport: { width: 1280, height: 900 },
  });
  return {
    browser,
    async close() {
      await browser.close().catch(() => undefined);
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The API's HTTP app over `runtime`, served on 127.0.0.1 (a free port), with fast live-update polling
 * for tests; `tokens` maps each operator credential's name to its token (every scope).
 */
export async function serveConsoleApi(
  runtime: Runtime,
  tokens: Record<string, string>,
  pollMs = 100,
): Promise<{ url: string; close(): Promise<void> }> {
  const operators = operatorCredentials(Object.entries(tokens).map(([name, token]) => ({ name, token })));
  const app = buildHttpApp(runtime, { operators, console: { pollMs } });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      runtime.ctx.shutdown.abort(); // ends the live-update streams
      const http = server as Server;
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** Where the browser tests save their screenshots (`var/console/` at the repository root). */
const SCREENSHOT_DIR = join(import.meta.dirname, "../../../../var/console");

/** Saves a full-page screenshot of `page` as `var/console/<name>.png`; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Signs in through the sign-in form with `token` (the session is its credential's); resolves once the next page has loaded. */
export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/console/sign-in`);
  await page.locator("#token").fill(token);
  await Promise.all([page.waitForNavigation(), page.locator("button[type=submit]").click()]);
}
