// The scenarios' small HTTP clients of the run API, operator routes and fixture provider, and their polling helpers.
import {
  RUN_API,
  routePath,
  routeQueryString,
  SYSTEM_API,
  type ApiRoute,
  type CreateRunResponse,
  type EnqueueToolCallRequest,
  type EnqueueToolCallResponse,
  OPERATOR_API,
  type OperatorEffectDetail,
  type RouteInput,
  type RouteOutput,
  type ToolCallView,
} from "@mosoo/contracts";

async function json(res: Response, what: string): Promise<unknown> {
  const text = await res.text();
  if (!res.ok) throw new Error(`e2e.http_error: ${what} answered ${res.status}: ${text.slice(0, 300)}`);
  return text ? (JSON.parse(text) as unknown) : null;
}

/** A run as `GET /v1/runs/:id` shows it (the fields the scenarios read). */
export interface RunViewBody {
  run: { status: string; error: { code: string; retryable: boolean; details?: Record<string, unknown> } | null };
  commands: Array<{
    id: string;
    status: string;
    error: { code: string; retryable: boolean; details?: Record<string, unknown> } | null;
    result: { outputText: string } | null;
    terminalAtMs: number | null;
  }>;
  effects: Array<{
    id: string;
    status: string;
    resolution: string | null;
    idempotencyKey: string;
    attemptCount: number;
    providerReceipt: unknown;
    result: unknown;
    reconciliations: Array<{
      outcome: string;
      reasonCode: string | null;
      trigger: string;
      adapterId: string;
      adapterVersion: string;
      adapterPackage: string | null;
    }>;
  }>;
  events: Array<{ seq: number; type: string; terminal: boolean; payload: Record<string, unknown> }>;
}

/**
 * A small client of the run API for the scenarios, sending `Authorization: Bearer <apiKey>` (a key
 * with `runs:write`, `runs:read` and, for `metrics()`, `metrics:read`). Every failed call throws
 * `e2e.http_error` with the status and body.
 */
export class RunApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string,
  ) {}

  /**
   * Sends route `route` of the table (`RUN_API`/`SYSTEM_API` of `@mosoo/contracts`) with the API key:
   * its path parameters percent-encoded, its query, its JSON body; resolves to the raw answer.
   */
  private async send<R extends ApiRoute>(route: R, input: RouteInput<R>): Promise<Response> {
    const { params, query, body } = input as { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown };
    return fetch(this.baseUrl + routePath(route, params) + routeQueryString(query), {
      method: route.method,
      headers: { authorization: `Bearer ${this.apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  }

  /** Sends `route` and parses its 2xx answer with the table's response schema. @throws Error `e2e.http_error`. */
  private async call<R extends ApiRoute>(route: R, input: RouteInput<R>, what: string): Promise<RouteOutput<R>> {
    const answer = await json(await this.send(route, input), what);
    return (route.response ? route.response.parse(answer) : answer) as RouteOutput<R>;
  }

  /** Creates a run for the Driver instance, in session `sessionId` when given (else a new session). */
  async createRun(driverInstanceId: string, sessionId?: string): Promise<CreateRunResponse> {
    return this.call(RUN_API.createRun, { body: { driverInstanceId, ...(sessionId ? { sessionId } : {}) } }, "create run");
  }

  /** Enqueues a tool call and returns the HTTP status with the parsed body, whatever the status (a refusal is an answer here). */
  async tryEnqueueToolCall(runId: string, req: EnqueueToolCallRequest): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await this.send(RUN_API.enqueueToolCall, { params: { runId }, body: req });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** What became of tool call `toolCallId` of run `runId` (`GET /v1/runs/:runId/tool-calls/:toolCallId`). */
  async getToolCall(runId: string, toolCallId: string): Promise<ToolCallView> {
    return this.call(RUN_API.getToolCall, { params: { runId, toolCallId } }, "get tool call");
  }

  async enqueueToolCall(runId: string, req: EnqueueToolCallRequest): Promise<EnqueueToolCallResponse> {
    return this.call(RUN_API.enqueueToolCall, { params: { runId }, body: req }, "enqueue tool call");
  }

  async getRun(runId: string): Promise<RunViewBody> {
    return (await this.call(RUN_API.getRun, { params: { runId } }, "get run")) as RunViewBody;
  }

  async metrics(): Promise<string> {
    const res = await this.send(SYSTEM_API.metrics, {});
    return res.ok ? res.text() : "";
  }
}

/**
 * One effect with its whole history as an operator sees it (`GET /api/operator/effects/:effectId`,
 * `effects show`): its receipts, `operatorAttention` and lookups, read with the operator token
 * `operatorToken` (the API must run with reconciliation on).
 * @throws Error `e2e.http_error` when the API refuses the request.
 */
export async function showEffectAsOperator(apiUrl: string, operatorToken: string, effectId: string): Promise<OperatorEffectDetail> {
  const route = OPERATOR_API.operatorShow;
  const res = await fetch(apiUrl + routePath(route, { effectId }), { headers: { authorization: `Bearer ${operatorToken}` } });
  return route.response.parse(await json(res, "operator show effect"));
}

/** Per-key counters of the fixture provider (`GET /control/stats`). */
export interface ProviderStats {
  writes: Record<string, number>;
  createCalls: Record<string, number>;
  lookups: Record<string, number>;
  fenced: string[];
}

/** A client of the fixture provider's control API. */
export class ProviderControlClient {
  constructor(readonly controlUrl: string) {}

  async stats(): Promise<ProviderStats> {
    return (await json(await fetch(`${this.controlUrl}/stats`), "provider stats")) as ProviderStats;
  }

  async setFaults(faults: Record<string, unknown>): Promise<void> {
    await json(
      await fetch(`${this.controlUrl}/faults`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(faults),
      }),
      "provider faults",
    );
  }

  async release(): Promise<void> {
    await json(await fetch(`${this.controlUrl}/release`, { method: "POST" }), "provider release");
  }
}

/**
 * Polls `check` every 100 ms until it returns a value other than `undefined`.
 * @throws Error `e2e.timeout: <what>` after `timeoutMs` (ms).
 */
export async function pollUntil<T>(check: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`e2e.timeout: ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One `createIssue` queued by {@link enqueueCreateIssue}: the clients that drive it, its run and its call. */
export interface QueuedCreateIssue {
  runs: RunApiClient;
  control: ProviderControlClient;
  runId: string;
  sessionId: string;
  call: EnqueueToolCallResponse;
}

/**
 * The write every scenario makes: creates a run for Driver instance `driverInstanceId` on the API at
 * `api.url` (with its run API key) and queues one `createIssue` on server `tracker` ("Disk full on
 * db-1"). Returns the run API client, the provider's control client, the run id and the queued call.
 * @throws Error `e2e.http_error` when the API refuses either request.
 */
export async function enqueueCreateIssue(
  api: { url: string; credentials: { apiKey: string } },
  provider: { controlUrl: string },
  driverInstanceId: string,
): Promise<QueuedCreateIssue> {
  const runs = new RunApiClient(api.url, api.credentials.apiKey);
  const control = new ProviderControlClient(provider.controlUrl);
  const { runId, sessionId } = await runs.createRun(driverInstanceId);
  const call = await runs.enqueueToolCall(runId, {
    serverId: "tracker",
    toolName: "createIssue",
    arguments: { title: "Disk full on db-1", body: "seen at 03:12" },
    toolCallId: "tc-db-1",
  });
  return { runs, control, runId, sessionId, call };
}

/**
 * Waits until the provider counted the call with `idempotencyKey` once in `counter` (`writes`: it
 * committed the write; `createCalls`: the call reached it), polling its control API.
 * @throws Error `e2e.timeout: <what>` after `timeoutMs` (ms).
 */
export async function waitForProviderCount(
  control: ProviderControlClient,
  counter: "writes" | "createCalls",
  idempotencyKey: string,
  timeoutMs: number,
  what: string,
): Promise<void> {
  await pollUntil(async () => ((await control.stats())[counter][idempotencyKey] === 1 ? true : undefined), timeoutMs, what);
}
