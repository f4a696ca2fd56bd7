/** The console's pages, from `location`: the unknown-effect list (`/console?filters`), one effect (`/console/effects/:id`) and the API reference (`/console/reference`). */
export type Route = { page: "list"; search: string } | { page: "effect"; effectId: string } | { page: "reference" };

const EFFECT_PATH = /^\/console\/effects\/([0-9A-HJKMNP-TV-Z]{26})\/?$/;
const REFERENCE_PATH = /^\/console\/reference\/?$/;

/** The route of the current location. */
export function currentRoute(): Route {
  if (REFERENCE_PATH.test(location.pathname)) return { page: "reference" };
  const m = EFFECT_PATH.exec(location.pathname);
  return m?.[1] ? { page: "effect", effectId: m[1] } : { page: "list", search: location.search };
}

const listeners = new Set<(r: Route) => void>();
addEventListener("popstate", () => listeners.forEach((l) => l(currentRoute())));

/** Calls `listener` on every navigation (links, back/forward); returns the unsubscribe. */
export function onRouteChange(listener: (r: Route) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * Goes to `href` inside the console without a reload. Given the click event, a click with a
 * modifier key (new tab, new window) is left to the browser.
 */
export function navigate(href: string, event?: MouseEvent): void {
  if (event) {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
  }
  history.pushState(null, "", href);
  listeners.forEach((l) => l(currentRoute()));
  window.scrollTo(0, 0);
}
