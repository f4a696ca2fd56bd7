import { render } from "preact";
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { call, CONSOLE_ROUTES, setCsrfToken } from "./api.js";
import { EffectPage } from "./effect-page.js";
import { ListPage } from "./list-page.js";
import { ReferencePage } from "./reference-page.js";
import { currentRoute, navigate, onRouteChange, type Route } from "./router.js";
import type { SessionInfo } from "./types.js";

/** Live-update connection state, shown in the header. */
type LiveState = "connecting" | "live" | "reconnecting";

/**
 * The console shell: loads the session (the credential's name and scopes, and the CSRF token), opens one server-sent event stream
 * (`/console/api/events`: a `change` event whenever effects change) and renders the page of the
 * current path. A change bumps `changeSeq`, which makes the page reload its data without a reload.
 */
function App() {
  const [session, setSession] = useState<SessionInfo | null>(null);
  const [route, setRoute] = useState<Route>(currentRoute());
  const [changeSeq, setChangeSeq] = useState(0);
  const [live, setLive] = useState<LiveState>("connecting");

  useEffect(() => {
    void call("consoleSession", {}).then((r) => {
      if (r.ok) {
        setCsrfToken(r.data.csrfToken);
        setSession(r.data);
      }
    });
    const off = onRouteChange(setRoute);
    const events = new EventSource(CONSOLE_ROUTES.consoleEvents.path);
    events.addEventListener("open", () => setLive("live"));
    events.addEventListener("error", () => setLive("reconnecting"));
    events.addEventListener("change", () => setChangeSeq((n) => n + 1));
    return () => {
      off();
      events.close();
    };
  }, []);

  useEffect(() => {
    document.title =
      route.page === "effect"
        ? `Effect ${route.effectId} · Mosoo operator console`
        : route.page === "reference"
          ? "API reference · Mosoo operator console"
          : "Unknown effects · Mosoo operator console";
  }, [route]);

  if (!session) return html`<p class="loading" role="status">Loading the operator console…</p>`;
  return html`
    <header class="top">
      <a class="brand" href="/console" onClick=${(e: MouseEvent) => navigate("/console", e)}>Mosoo operator console</a>
      <a class="reference-link" href="/console/reference" onClick=${(e: MouseEvent) => navigate("/console/reference", e)}>API reference</a>
      <span class="live live-${live}" role="status" aria-live="polite">Live updates: ${live === "live" ? "on" : live}</span>
      <span class="who" title="operator credential and its scopes"
        >Signed in as <strong class="who-name">${session.actor}</strong>
        <span class="who-scopes">(${session.scopes.join(", ")})</span></span
      >
      <form method="post" action="/console/sign-out" class="sign-out">
        <input type="hidden" name="csrf" value=${session.csrfToken} />
        <button type="submit">Sign out</button>
      </form>
    </header>
    <main id="main">
      ${
        route.page === "effect"
          ? html`<${EffectPage} effectId=${route.effectId} changeSeq=${changeSeq} />`
          : route.page === "reference"
            ? html`<${ReferencePage} />`
            : html`<${ListPage} search=${route.search} changeSeq=${changeSeq} />`
      }
    </main>
  `;
}

const root = document.getElementById("app");
if (root) render(html`<${App} />`, root);
