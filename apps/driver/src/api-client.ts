import {
  ApiErrorBodySchema,
  DRIVER_API,
  findJsonProblem,
  formatJsonProblem,
  routePath,
  routeQueryString,
  type ApiRoute,
  type DriverRouteName,
  type RouteInput,
  type RouteOutput,
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
  return (
    error.status === 401 || (error.status === 409 && (error.code === "driver.connection_superseded" || error.code === "driver.finalized"))
  );
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

/** The table entry of Driver-protocol route `N` (`DRIVER_API` of `@mosoo/contracts`). */
export type DriverRoute<N extends DriverRouteName> = (typeof DRIVER_API)[N];

/** Options of one call: `signal` aborts it (and its retries); the abort reason is rethrown as is. */
export interface DriverCallOptions {
  signal?: AbortSignal | undefined;
}

/**
 * The whole Driver protocol as one typed call, derived from the route table (`DRIVER_API` of
 * `@mosoo/contracts`): `call(name, {params?, query?, body?})` sends route `name` and resolves to its
 * parsed answer. Every route is idempotent on the API side (a repeat answers `duplicate`) except
 * `register` (never retried: a repeat would mint another instance) and `effectClaim` (a
 * compare-and-set whose retry at worst fences the effect `unknown`, never a duplicate write; see its
 * note in the table).
 */
export interface DriverApi {
  call<N extends DriverRouteName>(
    name: N,
    input: RouteInput<DriverRoute<N>>,
    options?: DriverCallOptions,
  ): Promise<RouteOutput<DriverRoute<N>>>;
}

/** The calls a command handler makes (what its tests fake): the same typed call. */
export type DriverCommandApi = DriverApi;

interface RequestSpec<S extends z.ZodType> {
  method: ApiRoute["method"];
  path: string;
  route: string;
  body?: unknown;
  responseSchema: S;
  /** Which bearer token the request carries: the Driver's own (`true`) or the enrollment token. */
  auth: true | "enrollment";
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

  /**
   * Sends Driver-protocol route `name` of the table: its body (and query) checked against the table's
   * schemas first ({@link ApiContractError} `request`, nothing sent), the path parameters
   * percent-encoded, the enrollment token on `register` and the Driver's own token elsewhere, and
   * the answer checked against the table's response schema. Idempotent routes (the table's
   * `idempotent`) are retried on {@link isRetryableApiError} failures. A long-poll (`waitMs` in the
   * query) gets `waitMs` more than the per-request timeout.
   */
  async call<N extends DriverRouteName>(
    name: N,
    input: RouteInput<DriverRoute<N>>,
    options: DriverCallOptions = {},
  ): Promise<RouteOutput<DriverRoute<N>>> {
    const route: ApiRoute = DRIVER_API[name];
    const { params, query, body } = input as { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown };
    const checkedQuery = route.query ? (checkRequest(route.query, query) as Record<string, unknown>) : undefined;
    const waitMs = typeof checkedQuery?.["waitMs"] === "number" ? checkedQuery["waitMs"] : 0;
    return this.request({
      method: route.method,
      path: `${routePath(route, params)}${routeQueryString(checkedQuery)}`,
      route: name,
      ...(route.body ? { body: checkRequest(route.body, body) } : {}),
      responseSchema: route.response as z.ZodType,
      auth: route.auth.kind === "registration" ? "enrollment" : true,
      retry: route.idempotent,
      ...(waitMs > 0 ? { timeoutMs: waitMs + this.requestTimeoutMs } : {}),
      signal: options.signal,
    }) as Promise<RouteOutput<DriverRoute<N>>>;
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
          {
            route: spec.route,
            attemptNumber,
            retriesLeft,
            errorCode: (error as ApiRequestError | ApiUnavailableError).code,
            err: error.message,
          },
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
