// The operator console's server-rendered fallback pages: sign-in, feature off, assets not built.
import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/** The console's stylesheet (built by `@mosoo/operator-console`), the only asset a signed-out page loads. */
const CSS = "/console/assets/console.css";

function page(title: string, body: HtmlEscapedString | Promise<HtmlEscapedString>) {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · Mosoo operator console</title>
        <link rel="stylesheet" href="${CSS}" />
      </head>
      <body>
        <main class="signin">${body}</main>
      </body>
    </html>`;
}

/**
 * The sign-in form (no script): an operator credential's token (`MOSOO_OPERATOR_TOKEN` or one of the
 * operator credentials file); the credential's name is recorded as the actor of every action. Every
 * interpolated value is HTML-escaped by hono's `html` helper. `error` is shown in an alert.
 */
export function signInPage(opts: { error?: string } = {}) {
  return page(
    "Sign in",
    html`<h1>Mosoo operator console</h1>
      <p>
        Sign in with your operator token to find, read and settle unknown effects. Every action is recorded in the audit trail under the
        name of the credential the token belongs to.
      </p>
      ${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ""}
      <form method="post" action="/console/session">
        <label for="token">Operator token</label>
        <input id="token" name="token" type="password" autocomplete="current-password" required />
        <button type="submit" class="primary">Sign in</button>
      </form>`,
  );
}

/** Shown instead of the console while `MOSOO_EFFECT_RECONCILIATION` is off (the operator service is part of that feature). */
export function featureOffPage() {
  return page(
    "Feature off",
    html`<h1>Mosoo operator console</h1>
      <p class="off" role="status">
        <strong>Feature off.</strong> Effect reconciliation is off on this API (<code>MOSOO_EFFECT_RECONCILIATION</code>), and with it the
        operator surface: there is nothing to list or settle here. Unknown effects stay fenced (the baseline); use
        <code>MOSOO_EFFECT_RECONCILIATION=on</code> to turn it on.
      </p>`,
  );
}

/** Shown when the console's assets were not built (the install's `prepare` step did not run). */
export function notBuiltPage() {
  return page(
    "Not built",
    html`<h1>Mosoo operator console</h1>
      <p class="error" role="alert">The console's assets are not built. Run <code>npm run setup</code> (pnpm install builds them).</p>`,
  );
}

/** The console is off: no operator credential is configured. Answered with 404 to every `/console` path. */
export const CONSOLE_OFF_TEXT =
  "Not found: the operator console is off (neither MOSOO_OPERATOR_TOKEN nor MOSOO_OPERATOR_CREDENTIALS_FILE is set).";
