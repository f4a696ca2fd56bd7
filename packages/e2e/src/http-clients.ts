import {
  CreateRunResponseSchema,
  EnqueueToolCallResponseSchema,
  RUN_API,
  routePath,
  type CreateRunResponse,
  type EnqueueToolCallRequest,
  type EnqueueToolCallResponse,
} from "@mosoo/contracts";

async function json(res: Response, what: string): Promise<unknown> {
  const text = await res.text();
  if (!res.ok) throw new Error(`e2e.http_error: ${what} answered ${res.status}: ${text.slice(0, 300)}`);
  return text ? (JSON.parse(text) as unknown) : null;
}

/** A run as `GET /v1/runs/:id` shows it (the fields the scenarios read). */
export interface RunViewBody {
  run: { status: string; error: { code: string; retryable: boolean; details?: Record<string, unknown> } | null };
  commands: Array<{ id: string; status: string; error: { code: string; retryable: boolean; details?: Record<string, unknown> } | null; result: { outputText: string } | null; terminalAtMs: number | null }>;
  effects: Array<{
    id: string;
    status: string;
    resolution: string | null;
    idempotencyKey: string;
    attemptCount: number;
    providerReceipt: unknown;
    result: unknown;
    reconciliations: Array<{ outcome: string; reasonCode: string | null; trigger: string; adapterId: string; adapterVersion: string; adapterPackage: string | null }>;
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

  private headers(json = false): Record<string, string> {
    return { authorization: `Bearer ${this.apiKey}`, ...(json ? { "content-type": "application/json" } : {}) };
  }

  async createRun(driverInstanceId: string): Promise<CreateRunResponse> {
    const res = await fetch(this.baseUrl + RUN_API.createRun.path, { method: "POST", headers: this.headers(true), body: JSON.stringify({ driverInstanceId }) });
    return CreateRunResponseSchema.parse(await json(res, "create run"));
  }

  async enqueueToolCall(runId: string, req: EnqueueToolCallRequest): Promise<EnqueueToolCallResponse> {
    const res = await fetch(this.baseUrl + routePath(RUN_API.enqueueToolCall, { runId }), { method: "POST", headers: this.headers(true), body: JSON.stringify(req) });
    return EnqueueToolCallResponseSchema.parse(await json(res, "enqueue tool call"));
  }

  async getRun(runId: string): Promise<RunViewBody> {
    return (await json(await fetch(this.baseUrl + routePath(RUN_API.getRun, { runId }), { headers: this.headers() }), "get run")) as RunViewBody;
  }

  async metrics(): Promise<string> {
    const res = await fetch(`${this.baseUrl}/metrics`, { headers: this.headers() });
    return res.ok ? res.text() : "";
  }
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
    await json(await fetch(`${this.controlUrl}/faults`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(faults) }), "provider faults");
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
