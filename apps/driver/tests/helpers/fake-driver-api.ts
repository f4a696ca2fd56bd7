import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { DRIVER_API, matchRoute, newUlid, type DriverCommandEnvelope, type EffectClaim } from "@mosoo/contracts";

/** One request the fake API received. */
export interface FakeApiRequest {
  method: string;
  route: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  authorization: string | undefined;
  /** The request's W3C `traceparent` header (the Driver sends one when traced). */
  traceparent: string | undefined;
}

type Answer = { status: number; body: unknown };

/**
 * What the fake's "database" holds: shared by every {@link FakeDriverApi} built on it, as N API
 * instances share one PostgreSQL (docs/DESIGN.md §11): an instance, its token and its connection are
 * valid on each of them, and an effect completed through one is completed for all.
 */
export class FakeLedgerState {
  readonly queue: DriverCommandEnvelope[] = [];
  readonly claims = new Map<string, EffectClaim>();
  readonly tokens = new Map<string, string>();
  /** Effects whose `complete` was applied (a repeat answers `duplicate`). */
  readonly completedEffects = new Set<string>();
  /** The connection that claimed each effect (by effect id): its reports are taken even after a newer connection superseded it, as the API does. */
  readonly attemptConnections = new Map<string, string>();
  currentConnectionId: string | null = null;
  heartbeatTtlMs = 30_000;
}

/**
 * When a scripted kill ({@link FakeDriverApi.killOn}) stops the fake: before the request is applied,
 * after it (the answer is lost), or once it answered: the fake stops listening, then answers with
 * `connection: close`, so the client's next request needs a new connection and is refused.
 */
export type KillPoint = "before_apply" | "after_apply" | "after_answer";

/**
 * A small in-memory stand-in for the API's Driver routes over real HTTP on 127.0.0.1 (a test
 * double of the boundary: it answers in the contracts' shapes and records every request).
 * `failNext(route, answers)` scripts the next answers of a route (e.g. 503s, a 409);
 * `killOn(route, point)` makes the next request of a route stop the whole fake (every open
 * connection destroyed, no answer): an API instance SIGKILLed mid-call. Two fakes built on one
 * {@link FakeLedgerState} are two API instances of one deployment.
 */
export class FakeDriverApi {
  readonly requests: FakeApiRequest[] = [];
  url = "";
  private readonly scripted = new Map<string, Answer[]>();
  private readonly kills = new Map<string, KillPoint>();
  private server: Server | null = null;

  constructor(readonly state: FakeLedgerState = new FakeLedgerState()) {}

  get queue(): DriverCommandEnvelope[] {
    return this.state.queue;
  }
  get claims(): Map<string, EffectClaim> {
    return this.state.claims;
  }
  get tokens(): Map<string, string> {
    return this.state.tokens;
  }
  get currentConnectionId(): string | null {
    return this.state.currentConnectionId;
  }
  get heartbeatTtlMs(): number {
    return this.state.heartbeatTtlMs;
  }
  set heartbeatTtlMs(ms: number) {
    this.state.heartbeatTtlMs = ms;
  }

  /** Awaited before each request is answered (after it is recorded): a test holds an answer until an event. */
  beforeAnswer: ((route: string) => Promise<void>) | null = null;

  /** The next request of `route` stops this fake at `point` instead of answering. */
  killOn(route: string, point: KillPoint): void {
    this.kills.set(route, point);
  }

  /** True while the fake listens. */
  get running(): boolean {
    return this.server !== null;
  }

  /** The `executing`/`unknown` effect counts `self` answers (the API's view of the instance). */
  selfEffects = { executing: 0, unknown: 0 };

  /** Queues scripted answers for the next requests to `route` (a `DRIVER_API` route name). */
  failNext(route: string, ...answers: Answer[]): void {
    this.scripted.set(route, [...(this.scripted.get(route) ?? []), ...answers]);
  }

  /** Registers an instance directly (as if an earlier process had). */
  seedInstance(): { driverInstanceId: string; driverToken: string } {
    const driverInstanceId = newUlid();
    const driverToken = `mdt_${driverInstanceId}_${"k".repeat(40)}`;
    this.tokens.set(driverToken, driverInstanceId);
    return { driverInstanceId, driverToken };
  }

  /** The recorded requests of one route. */
  requestsOf(route: string): FakeApiRequest[] {
    return this.requests.filter((r) => r.route === route);
  }

  /** Listens on 127.0.0.1 (`port`: a given one, e.g. to come back on the port of an earlier run; default a free one). */
  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(port, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x");
    let text = "";
    for await (const chunk of req) text += String(chunk);
    const body: unknown = text ? JSON.parse(text) : undefined;
    const route = routeOf(req.method ?? "GET", url.pathname);
    this.requests.push({
      method: req.method ?? "GET",
      route,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body,
      authorization: req.headers.authorization,
      traceparent: typeof req.headers.traceparent === "string" ? req.headers.traceparent : undefined,
    });
    await this.beforeAnswer?.(route);
    const kill = this.kills.get(route);
    if (kill) this.kills.delete(route);
    if (kill === "before_apply") return this.stop();
    const scripted = this.scripted.get(route)?.shift();
    const answer = scripted ?? (await this.answer(route, url, body as Record<string, unknown> | undefined, req.headers.authorization));
    if (kill === "after_apply") return this.stop();
    if (res.destroyed) return;
    if (kill === "after_answer") {
      // Stop listening first (new connections are refused), then answer on this connection and let it
      // close gracefully after the answer (`connection: close`): the answer arrives whole.
      const server = this.server;
      this.server = null;
      server?.close();
      res.writeHead(answer.status, { "content-type": "application/json", connection: "close" }).end(JSON.stringify(answer.body));
      return;
    }
    res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body));
  }

  private async answer(route: string, url: URL, body: Record<string, unknown> | undefined, auth: string | undefined): Promise<Answer> {
    if (route === "register") {
      const { driverInstanceId, driverToken } = this.seedInstance();
      return ok({ driverInstanceId, driverToken });
    }
    const instance = this.tokens.get((auth ?? "").replace(/^Bearer /, ""));
    if (!instance) return error(401, "auth.invalid_token", "unknown driver token");
    if (route === "connect") {
      this.state.currentConnectionId = newUlid();
      return ok({
        driverInstanceId: instance,
        connectionId: this.state.currentConnectionId,
        heartbeatTtlMs: this.heartbeatTtlMs,
        pendingCommandCount: this.queue.length,
      });
    }
    if (route === "self")
      return ok({
        driverInstanceId: instance,
        name: "driver-test",
        status: "connected",
        connectionId: this.state.currentConnectionId,
        lastHeartbeatAtMs: null,
        heartbeatTtlMs: this.heartbeatTtlMs,
        heartbeatExpiresAtMs: null,
        effects: this.selfEffects,
        pendingCommandCount: this.queue.length,
      });
    const connectionId = route === "nextCommand" ? url.searchParams.get("connectionId") : body?.["connectionId"];
    const attemptReport =
      route === "effectComplete" && this.state.attemptConnections.get(url.pathname.split("/").at(-2) ?? "") === connectionId;
    if (connectionId !== this.currentConnectionId && !attemptReport)
      return error(409, "driver.connection_superseded", "a newer connection exists");
    switch (route) {
      case "heartbeat":
        return ok({ heartbeatTtlMs: this.heartbeatTtlMs });
      case "finalize":
        return ok({ effectsFenced: 0, commandsCompleted: 0, commandsFailed: 0, runsFailed: 0, effectsReconciled: 0 });
      case "nextCommand": {
        const deadline = Date.now() + Number(url.searchParams.get("waitMs") ?? 0);
        while (this.queue.length === 0 && Date.now() < deadline && this.currentConnectionId === connectionId && this.running)
          await sleep(10);
        if (!this.running) return ok({ command: null }); // killed meanwhile: nothing is taken from the queue
        return ok({ command: this.queue.shift() ?? null });
      }
      case "commandUpdate":
        return ok({ outcome: "applied", status: body?.["status"] });
      case "effectClaim": {
        const commandId = String(body?.["commandId"]);
        const claim = this.claims.get(commandId) ?? {
          kind: "execute",
          effectId: newUlid(),
          attempt: 1,
          idempotencyKey: newUlid(),
          sendWithinMs: 10_000,
        };
        this.claims.set(commandId, claim);
        if (claim.kind === "execute") this.state.attemptConnections.set(claim.effectId, String(connectionId));
        return ok(claim);
      }
      case "effectComplete": {
        const effectId = url.pathname.split("/").at(-2) ?? "";
        if (this.state.completedEffects.has(effectId)) return ok({ outcome: "duplicate", status: "succeeded" });
        this.state.completedEffects.add(effectId);
        return ok({ outcome: "applied", status: "succeeded" });
      }
      case "effectMarkUnknown":
        return ok({ outcome: "applied", status: "unknown" });
      default:
        return error(404, "route.not_found", `no route ${route}`);
    }
  }
}

/** The table's name of a request (`DRIVER_API` of `@mosoo/contracts`, e.g. `effectComplete`), or `METHOD path` for one the protocol does not have. */
function routeOf(method: string, path: string): string {
  return matchRoute(DRIVER_API, method, path)?.name ?? `${method} ${path}`;
}

function ok(body: unknown): Answer {
  return { status: 200, body };
}

/** An API error answer `{error: {code, message}}`. */
export function error(status: number, code: string, message: string): Answer {
  return { status, body: { error: { code, message } } };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
