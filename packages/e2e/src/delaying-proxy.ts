// An HTTP forwarder between a Driver and the API that delays chosen requests or holds their answers, for timing scenarios.
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";

/**
 * One rule of {@link startDelayingProxy}: requests whose method is `method` and whose path matches
 * `path` are forwarded `delayRequestMs` (ms) late (then once `gate()` resolves, when given), and their
 * answer is held `holdAnswerMs` (ms) after the upstream answered (the upstream has already acted on
 * the request by then).
 * With `after`, the rule applies only once the upstream has answered a request with that path
 * (an ordering the test controls, not a timer): before that, matching requests pass through.
 */
export interface DelayRule {
  method: string;
  path: string | RegExp;
  delayRequestMs?: number;
  holdAnswerMs?: number;
  /**
   * Awaited before each matching request is forwarded (after `delayRequestMs`): a test holds the
   * requests from some event on (e.g. heartbeats, so the API's TTL expires) by returning a promise
   * it resolves later, without any timer deciding when.
   */
  gate?: () => Promise<void>;
  /** A path (exact) the upstream must have answered once before this rule applies. */
  after?: string;
}

/** What the proxy saw: each forwarded request's method, path, and when (ms since the epoch) it was sent upstream and answered downstream. */
interface ProxiedRequest {
  method: string;
  path: string;
  forwardedAtMs: number;
  answeredAtMs: number;
  status: number;
}

/** A started {@link startDelayingProxy}: its base `url`, what it forwarded, and `close()`. */
export interface DelayingProxy {
  url: string;
  seen: ProxiedRequest[];
  close(): Promise<void>;
}

/** Hop-by-hop and length headers that a forwarder must not copy (fetch sets its own). */
const DROPPED_HEADERS = new Set(["host", "connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"]);

function copyHeaders(from: Headers): Headers {
  const out = new Headers();
  from.forEach((value, key) => {
    if (!DROPPED_HEADERS.has(key.toLowerCase())) out.set(key, value);
  });
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A small HTTP forwarder (hono on @hono/node-server, upstream calls with Node's fetch) between a
 * Driver and the API, on 127.0.0.1 and a free port, that delays requests or holds answers per
 * {@link DelayRule} (the first matching rule applies; others pass through). Used to
 * hold the claim's answer past the send-by deadline and, once the API has answered the claim
 * (`after`), delay heartbeats past the heartbeat TTL. An upstream that cannot be reached answers 502.
 */
export async function startDelayingProxy(targetUrl: string, rules: DelayRule[]): Promise<DelayingProxy> {
  const seen: ProxiedRequest[] = [];
  /** Paths the upstream has answered at least once (the `after` gates). */
  const upstreamAnswered = new Set<string>();
  const app = new Hono();
  app.all("*", async (c) => {
    const incoming = new URL(c.req.url);
    const rule = rules.find(
      (r) =>
        r.method === c.req.method &&
        (typeof r.path === "string" ? r.path === incoming.pathname : r.path.test(incoming.pathname)) &&
        (r.after === undefined || upstreamAnswered.has(r.after)),
    );
    const body = c.req.method === "GET" || c.req.method === "HEAD" ? undefined : await c.req.arrayBuffer();
    if (rule?.delayRequestMs) await sleep(rule.delayRequestMs);
    if (rule?.gate) await rule.gate();
    const forwardedAtMs = Date.now();
    let upstream: Response;
    try {
      upstream = await fetch(targetUrl + incoming.pathname + incoming.search, {
        method: c.req.method,
        headers: copyHeaders(c.req.raw.headers),
        ...(body ? { body } : {}),
      });
    } catch (error) {
      return c.json({ error: { code: "proxy.upstream_unreachable", message: (error as Error).message } }, 502);
    }
    const payload = await upstream.arrayBuffer();
    upstreamAnswered.add(incoming.pathname);
    if (rule?.holdAnswerMs) await sleep(rule.holdAnswerMs);
    seen.push({ method: c.req.method, path: incoming.pathname, forwardedAtMs, answeredAtMs: Date.now(), status: upstream.status });
    return new Response(payload, { status: upstream.status, headers: copyHeaders(upstream.headers) });
  });
  const { server, port } = await new Promise<{ server: ServerType; port: number }>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info) => resolve({ server: s, port: info.port }));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
