import {
  ApiErrorBodySchema,
  CommandUpdateRequestSchema,
  CommandUpdateResponseSchema,
  ConnectDriverResponseSchema,
  ConnectionRequestSchema,
  DRIVER_API,
  routePath,
  EffectClaimRequestSchema,
  EffectClaimSchema,
  EffectCompleteRequestSchema,
  EffectDeadlineMissedRequestSchema,
  EffectLateResultRequestSchema,
  EffectMarkUnknownRequestSchema,
  EffectTransitionResponseSchema,
  FinalizationSummarySchema,
  findJsonProblem,
  formatJsonProblem,
  HeartbeatResponseSchema,
  NextCommandQuerySchema,
  NextCommandResponseSchema,
  RegisterDriverRequestSchema,
  RegisterDriverResponseSchema,
  type CommandUpdateRequest,
  type CommandUpdateResponse,
  type ConnectDriverResponse,
  type EffectClaim,
  type EffectClaimRequest,
  type EffectCompleteRequest,
  type EffectDeadlineMissedRequest,
  type EffectLateResultRequest,
  type EffectMarkUnknownRequest,
  type EffectTransitionResponse,
  type FinalizationSummary,
  type HeartbeatResponse,
  type NextCommandResponse,
  type RegisterDriverRequest,
  type RegisterDriverResponse,
} from "@mosoo/contracts";
import pRetry from "p-retry";
import type { Logger } from "pino";
import type { z } from "zod";
import { formatZodIssues } from "./driver-config.loader.js";

/**
 * The API answered with a 4xx/5xx. `status` is the HTTP status; `code` the stable error code from
 * the body `{error: {code, message, details?}}` (e.g. `driver.connection_superseded`,
 * `auth.invalid_token`), or `http.<status>` when the body is not of that shape.
 */
export class ApiRequestError extends Error {
  override readonly name = "ApiRequestError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** The API could not be reached (connection refused/reset, DNS, or the per-request timeout). Code `api.unreachable`. */
export class ApiUnavailableError extends Error {
  override readonly name = "ApiUnavailableError";
  /** Stable error code. */
  readonly code = "api.unreachable";
}

/**
 * A request or response did not match the Driver protocol's zod schemas (`direction` tells which).
 * Code `api.contract_violation`. Never retried: repeating it gives the same answer.
 */
export class ApiContractError extends Error {
  override readonly name = "ApiContractError";
  /** Stable error code. */
  readonly code = "api.contract_violation";
  constructor(
    readonly direction: "request" | "response",
    message: string,
  ) {
    super(message);
  }
}

/**
 * True for failures that are worth another attempt of an idempotent request: the API was
 * unreachable, or it answered 5xx. A 4xx is the API's considered answer and is never retried.
 */
export function isRetryableApiError(error: unknown): boolean {
  if (error instanceof ApiUnavailableError) return true;
  return error instanceof ApiRequestError && error.status >= 500;
}

/**
 * True when this process has lost its connection for good and must stop: 401 (token revoked or
 * unknown), 409 `driver.connection_superseded` (a newer connection of the same instance exists) or
 * 409 `driver.finalized` (the API finalized the instance, e.g. after its heartbeat expired).
 */
export function isConnectionLostError(error: unknown): boolean {
  if (!(error instanceof ApiRequestError)) return false;
  return error.status === 401 || (error.status === 409 && (error.code === "driver.connection_superseded" || error.code === "driver.finalized"));
}

/** True for 409 `driver.finalized`: the instance in the state file was finalized and can never connect again. */
export function isInstanceFinalizedError(error: unknown): boolean {
  return error instanceof ApiRequestError && error.status === 409 && error.code === "driver.finalized";
}

/** Bounded exponential backoff of retried API requests (p-retry). Delays in ms. */
export interface ApiRetryOptions {
  /** Retries after the first attempt (so `retries + 1` attempts at most). */
  retries: number;
  /** Delay before the first retry, ms. */
  minTimeoutMs: number;
  /** Upper bound of one delay, ms. */
  maxTimeoutMs: number;
}

/** Default retry policy: 5 attempts, 250 ms doubling up to 4 s (randomized). */
export const DEFAULT_API_RETRY: ApiRetryOptions = { retries: 4, minTimeoutMs: 250, maxTimeoutMs: 4_000 };

/** Options of {@link DriverApiClient}. */
export interface DriverApiClientOptions {
  /** Base URL of the API, e.g. `http://127.0.0.1:8787` (a path prefix is kept). */
  apiUrl: string;
  /** Bearer token for every route but `register`. */
  driverToken?: string | undefined;
  /** Bearer token of `register`: the API's `MOSOO_DRIVER_ENROLLMENT_TOKEN` (docs/DESIGN.md §10); without it the API answers 401. */
  enrollmentToken?: string | undefined;
  /** Retry policy of the idempotent requests; defaults to {@link DEFAULT_API_RETRY}. */
  retry?: Partial<ApiRetryOptions> | undefined;
  /** Timeout of one HTTP attempt in ms (the long-poll adds its `waitMs`); default 30 000. */
  requestTimeoutMs?: number | undefined;
  /** Logs retries at `warn` (message `api.retry`). */
  logger?: Logger | undefined;
  /** The fetch implementation (default: global `fetch`). */
  fetch?: typeof fetch | undefined;
}

/**
 * The calls a command handler makes (the part of {@link DriverApi} that tests fake).
 * All are idempotent on the API side (a repeat answers `duplicate`), except `effectClaim`, see its doc.
 */
export interface DriverCommandApi {
  /** `POST commandUpdate`: accepted / completed (with result) / failed (with a RunError). */
  commandUpdate(commandId: string, body: CommandUpdateRequest): Promise<CommandUpdateResponse>;
  /** `POST effectClaim`: the ledger's {@link EffectClaim} for the command's effect. */
  effectClaim(body: EffectClaimRequest): Promise<EffectClaim>;
  /** `POST effectComplete`: store the provider's result and receipt for attempt `attempt`. */
  effectComplete(effectId: string, body: EffectCompleteRequest): Promise<EffectTransitionResponse>;
  /** `POST effectMarkUnknown`: fence attempt `attempt` as `unknown`. */
  effectMarkUnknown(effectId: string, body: EffectMarkUnknownRequest): Promise<EffectTransitionResponse>;
  /**
   * `POST effectDeadlineMissed`: the claim's send-by deadline passed before `tools/call` was sent
   * (docs/DESIGN.md §3 rule 12); nothing was sent and never will be. The API settles the effect `not_executed`.
   */
  effectDeadlineMissed(effectId: string, body: EffectDeadlineMissedRequest): Promise<EffectTransitionResponse>;
  /**
   * `POST effectLateResult`: late evidence (docs/DESIGN.md §3 rule 13), the provider's real result after
   * the ledger refused it from `effectComplete` because the effect was fenced meanwhile.
   */
  effectLateResult(effectId: string, body: EffectLateResultRequest): Promise<EffectTransitionResponse>;
}

/** The whole Driver protocol (packages/contracts `DRIVER_ROUTES`) as typed calls. */
export interface DriverApi extends DriverCommandApi {
  /** `POST register {name, driverInstanceId?}` with the enrollment token (not retried: a repeat would mint another instance). */
  register(body: RegisterDriverRequest): Promise<RegisterDriverResponse>;
  /** `POST connect` (bearer): a new `connectionId`; earlier connections are superseded. */
  connect(): Promise<ConnectDriverResponse>;
  /** `POST heartbeat {connectionId}`: keeps the instance alive for `heartbeatTtlMs`. */
  heartbeat(connectionId: string): Promise<HeartbeatResponse>;
  /** `POST finalize {connectionId}`: the instance is gone for good; runs the finalization repair. */
  finalize(connectionId: string): Promise<FinalizationSummary>;
  /** `GET nextCommand?connectionId&waitMs`: long-poll for the next command (`null` after `waitMs`). */
  nextCommand(connectionId: string, waitMs: number, signal?: AbortSignal): Promise<NextCommandResponse>;
}

interface RequestSpec<S extends z.ZodType> {
  method: "GET" | "POST";
  path: string;
  route: string;
  body?: unknown;
  responseSchema: S;
  /** Which bearer token the request carries: the Driver's own (`true`), the enrollment token, or none. */
  auth: boolean | "enrollment";
  retry: boolean;
  timeoutMs?: number;
  signal?: AbortSignal | undefined;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/**
 * A typed HTTP client of the Driver protocol over `fetch`. Every request body is checked against
 * the contracts' zod schema before it is sent and every response is validated on arrival
 * (mismatch → {@link ApiContractError}). Non-2xx answers become {@link ApiRequestError};
 * network failures and timeouts {@link ApiUnavailableError}. Idempotent calls are retried with
 * p-retry on {@link isRetryableApiError} failures only.
 */
export class DriverApiClient implements DriverApi {
  private readonly baseUrl: string;
  private readonly retryOptions: ApiRetryOptions;
  private readonly requestTimeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: DriverApiClientOptions) {
    this.baseUrl = options.apiUrl.replace(/\/+$/, "");
    this.retryOptions = { ...DEFAULT_API_RETRY, ...options.retry };
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** A copy of this client that authenticates with `driverToken`. */
  withDriverToken(driverToken: string): DriverApiClient {
    return new DriverApiClient({ ...this.options, driverToken });
  }

  async register(body: RegisterDriverRequest): Promise<RegisterDriverResponse> {
    return this.request({
      method: "POST",
      path: DRIVER_API.register.path,
      route: "register",
      body: checkRequest(RegisterDriverRequestSchema, body),
      responseSchema: RegisterDriverResponseSchema,
      auth: "enrollment",
      retry: false,
    });
  }

  async connect(): Promise<ConnectDriverResponse> {
    // Retrying connect is safe: each successful connect supersedes the earlier ones, so an
    // ambiguous first attempt at worst leaves a superseded connection nobody uses.
    return this.request({
      method: "POST",
      path: DRIVER_API.connect.path,
      route: "connect",
      body: {},
      responseSchema: ConnectDriverResponseSchema,
      auth: true,
      retry: true,
    });
  }

  async heartbeat(connectionId: string): Promise<HeartbeatResponse> {
    return this.request({
      method: "POST",
      path: DRIVER_API.heartbeat.path,
      route: "heartbeat",
      body: checkRequest(ConnectionRequestSchema, { connectionId }),
      responseSchema: HeartbeatResponseSchema,
      auth: true,
      retry: true,
    });
  }

  async finalize(connectionId: string): Promise<FinalizationSummary> {
    // Finalization repair is idempotent ("running it again reports zeros").
    return this.request({
      method: "POST",
      path: DRIVER_API.finalize.path,
      route: "finalize",
      body: checkRequest(ConnectionRequestSchema, { connectionId }),
      responseSchema: FinalizationSummarySchema,
      auth: true,
      retry: true,
    });
  }

  async nextCommand(connectionId: string, waitMs: number, signal?: AbortSignal): Promise<NextCommandResponse> {
    const query = checkRequest(NextCommandQuerySchema, { connectionId, waitMs });
    const search = new URLSearchParams({ connectionId: query.connectionId, waitMs: String(query.waitMs) });
    return this.request({
      method: "GET",
      path: `${DRIVER_API.nextCommand.path}?${search.toString()}`,
      route: "nextCommand",
      responseSchema: NextCommandResponseSchema,
      auth: true,
      retry: true,
      timeoutMs: query.waitMs + this.requestTimeoutMs,
      signal,
    });
  }

  async commandUpdate(commandId: string, body: CommandUpdateRequest): Promise<CommandUpdateResponse> {
    return this.request({
      method: "POST",
      path: routePath(DRIVER_API.commandUpdate, { commandId }),
      route: "commandUpdate",
      body: checkRequest(CommandUpdateRequestSchema, body),
      responseSchema: CommandUpdateResponseSchema,
      auth: true,
      retry: true,
    });
  }

  async effectClaim(body: EffectClaimRequest): Promise<EffectClaim> {
    // The claim is a compare-and-set, not an idempotent update, yet retrying it after an
    // ambiguous failure (network error, 5xx) is still safe: if the first claim did land, the
    // effect is now `executing` without anyone calling the provider, and the retried claim finds
    // `executing` and fences it as `unknown` (docs/DESIGN.md §3 rule 2). The Driver then fails the
    // command with `external_effect.unknown` and never calls the provider: a needless fence at
    // worst (an operator or an adapter can resolve it), never a duplicate write.
    return this.request({
      method: "POST",
      path: DRIVER_API.effectClaim.path,
      route: "effectClaim",
      body: checkRequest(EffectClaimRequestSchema, body),
      responseSchema: EffectClaimSchema,
      auth: true,
      retry: true,
    });
  }

  async effectComplete(effectId: string, body: EffectCompleteRequest): Promise<EffectTransitionResponse> {
    return this.request({
      method: "POST",
      path: routePath(DRIVER_API.effectComplete, { effectId }),
      route: "effectComplete",
      body: checkRequest(EffectCompleteRequestSchema, body),
      responseSchema: EffectTransitionResponseSchema,
      auth: true,
      retry: true,
    });
  }

  async effectMarkUnknown(effectId: string, body: EffectMarkUnknownRequest): Promise<EffectTransitionResponse> {
    return this.request({
      method: "POST",
      path: routePath(DRIVER_API.effectMarkUnknown, { effectId }),
      route: "effectMarkUnknown",
      body: checkRequest(EffectMarkUnknownRequestSchema, body),
      responseSchema: EffectTransitionResponseSchema,
      auth: true,
      retry: true,
    });
  }

  async effectDeadlineMissed(effectId: string, body: EffectDeadlineMissedRequest): Promise<EffectTransitionResponse> {
    return this.request({
      method: "POST",
      path: routePath(DRIVER_API.effectDeadlineMissed, { effectId }),
      route: "effectDeadlineMissed",
      body: checkRequest(EffectDeadlineMissedRequestSchema, body),
      responseSchema: EffectTransitionResponseSchema,
      auth: true,
      retry: true,
    });
  }

  async effectLateResult(effectId: string, body: EffectLateResultRequest): Promise<EffectTransitionResponse> {
    return this.request({
      method: "POST",
      path: routePath(DRIVER_API.effectLateResult, { effectId }),
      route: "effectLateResult",
      body: checkRequest(EffectLateResultRequestSchema, body),
      responseSchema: EffectTransitionResponseSchema,
      auth: true,
      retry: true,
    });
  }

  private async request<S extends z.ZodType>(spec: RequestSpec<S>): Promise<z.output<S>> {
    if (!spec.retry) return this.attempt(spec);
    const { retries, minTimeoutMs, maxTimeoutMs } = this.retryOptions;
    return pRetry(() => this.attempt(spec), {
      retries,
      minTimeout: minTimeoutMs,
      maxTimeout: maxTimeoutMs,
      randomize: true,
      signal: spec.signal,
      shouldRetry: ({ error }) => isRetryableApiError(error),
      onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
        if (!isRetryableApiError(error) || retriesLeft === 0) return;
        this.options.logger?.warn(
          { route: spec.route, attemptNumber, retriesLeft, errorCode: (error as ApiRequestError | ApiUnavailableError).code, err: error.message },
          "api.retry",
        );
      },
    });
  }

  private async attempt<S extends z.ZodType>(spec: RequestSpec<S>): Promise<z.output<S>> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (spec.body !== undefined) headers["content-type"] = "application/json";
    if (spec.auth === "enrollment") {
      if (this.options.enrollmentToken) headers["authorization"] = `Bearer ${this.options.enrollmentToken}`;
    } else if (spec.auth) {
      if (!this.options.driverToken) throw new ApiContractError("request", `${spec.route} needs a driver token`);
      headers["authorization"] = `Bearer ${this.options.driverToken}`;
    }
    const timeout = AbortSignal.timeout(spec.timeoutMs ?? this.requestTimeoutMs);
    const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
    let status: number;
    let text: string;
    try {
      const response = await this.fetchImpl(`${this.baseUrl}${spec.path}`, {
        method: spec.method,
        headers,
        body: spec.body === undefined ? null : JSON.stringify(spec.body),
        signal,
      });
      status = response.status;
      text = await response.text();
    } catch (error) {
      if (spec.signal?.aborted) throw spec.signal.reason ?? error;
      const reason = timeout.aborted ? "timed out" : describeFetchError(error);
      throw new ApiUnavailableError(`${spec.method} ${spec.route} failed: ${reason}`, { cause: error });
    }
    if (status < 200 || status > 299) throw toApiRequestError(status, text, spec.route);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ApiContractError("response", `${spec.route} answered ${status} with a body that is not JSON`);
    }
    const parsed = spec.responseSchema.safeParse(json);
    if (!parsed.success) throw new ApiContractError("response", `${spec.route} response is invalid: ${formatZodIssues(parsed.error)}`);
    return parsed.data;
  }
}

/**
 * Checks an outgoing body against the shared JSON rules (`findJsonProblem`: depth, forbidden keys,
 * well-formed strings; docs/DESIGN.md §10) and then its contract schema, so the Driver never sends what
 * the API would refuse. @throws ApiContractError (`request`).
 */
function checkRequest<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const problem = findJsonProblem(body);
  if (problem) throw new ApiContractError("request", `request is invalid: ${formatJsonProblem(problem)}`);
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new ApiContractError("request", `request is invalid: ${formatZodIssues(parsed.error)}`);
  return parsed.data;
}

function toApiRequestError(status: number, text: string, route: string): ApiRequestError {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const body = ApiErrorBodySchema.safeParse(json);
  if (body.success) return new ApiRequestError(status, body.data.error.code, body.data.error.message, body.data.error.details);
  return new ApiRequestError(status, `http.${status}`, `${route} answered HTTP ${status}`);
}

function describeFetchError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as Error & { cause?: unknown }).cause;
  const causeCode = cause && typeof cause === "object" && "code" in cause ? String((cause as { code: unknown }).code) : undefined;
  return causeCode ? `${error.message} (${causeCode})` : error.message;
}
