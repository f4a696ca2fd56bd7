// The Driver's typed HTTP client of the Driver protocol: validated requests and answers, retries, fail-over across API URLs.
import {
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
import { currentTraceContext } from "@mosoo/telemetry";
import type { Logger } from "pino";
import type { z } from "zod";
import { ApiEndpointPool } from "./api-endpoints.js";
import {
  ApiContractError,
  ApiRequestError,
  ApiUnavailableError,
  deliveryOfFetchFailure,
  describeFetchError,
  isRetryableApiError,
  toApiRequestError,
} from "./api-errors.js";
import { DEFAULT_API_RETRY_BUDGET_MS, DEFAULT_API_RETRY_MAX_DELAY_MS } from "./driver-config.contract.js";
import { formatZodIssues } from "./driver-config.loader.js";

/**
 * The one retry policy of the Driver's idempotent API requests (p-retry): exponential backoff from
 * `minTimeoutMs` doubling up to `maxTimeoutMs`, each delay randomized (jitter: × 1–2, then capped),
 * until `retries` retries or `budgetMs` since the first attempt are spent, whichever comes first.
 * Delays and budget in ms.
 */
export interface ApiRetryOptions {
  /** Retries after the first attempt (so `retries + 1` attempts at most); `Infinity`: only the budget bounds them. */
  retries: number;
  /** Delay before the first retry, ms. */
  minTimeoutMs: number;
  /** Upper bound of one delay, ms. */
  maxTimeoutMs: number;
  /**
   * Time budget of one call's retries, ms, counted from its first attempt (p-retry's `maxRetryTime`):
   * no retry starts after it. An attempt in flight is not cut short (its own timeout bounds it).
   */
  budgetMs: number;
}

/**
 * Default retry policy: retries for up to 30 s (enough to ride out an API restart or a short
 * database failover), 250 ms doubling up to 5 s, randomized. A provider's result has its own,
 * longer budget (`DEFAULT_RESULT_REPORT_BUDGET_MS`, see `result-report.service.ts`).
 */
export const DEFAULT_API_RETRY: ApiRetryOptions = {
  retries: Number.POSITIVE_INFINITY,
  minTimeoutMs: 250,
  maxTimeoutMs: DEFAULT_API_RETRY_MAX_DELAY_MS,
  budgetMs: DEFAULT_API_RETRY_BUDGET_MS,
};

/** Options of {@link DriverApiClient}. */
export interface DriverApiClientOptions {
  /**
   * Base URLs of the API instances (one deployment on one shared database), in
   * order of preference, e.g. `["http://10.0.0.1:8787", "http://10.0.0.2:8787"]`; at least one. A
   * path prefix is kept, trailing slashes are dropped. See {@link ApiEndpointPool} for the
   * fail-over policy (sticky until failure).
   */
  apiUrls: readonly string[];
  /** Bearer token for every route but `register`. */
  driverToken?: string | undefined;
  /** Bearer token of `register`: the API's `MOSOO_DRIVER_ENROLLMENT_TOKEN`; without it the API answers 401. */
  enrollmentToken?: string | undefined;
  /** Retry policy of the idempotent requests; defaults to {@link DEFAULT_API_RETRY}. */
  retry?: Partial<ApiRetryOptions> | undefined;
  /** Timeout of one HTTP attempt in ms (the long-poll adds its `waitMs`); default 30 000. */
  requestTimeoutMs?: number | undefined;
  /** Logs retries at `warn` (`api.retry`), switches of API URL at `warn` (`api.failover`), resends at `debug` (`api.resend`). */
  logger?: Logger | undefined;
  /** The fetch implementation (default: global `fetch`). */
  fetch?: typeof fetch | undefined;
  /** The pool to share (clients of one process share one; {@link DriverApiClient.withDriverToken} passes it on; `apiUrls` is then ignored). Default: a new pool of `apiUrls`. */
  endpoints?: ApiEndpointPool | undefined;
}

/** The table entry of Driver-protocol route `N` (`DRIVER_API` of `@mosoo/contracts`). */
export type DriverRoute<N extends DriverRouteName> = (typeof DRIVER_API)[N];

/**
 * Options of one call:
 * - `signal` aborts it (and its retries); the abort reason is rethrown as is;
 * - `resendAfter` narrows the route's resend rule for this call: after an attempt failed with
 *   `api.unreachable` or a 5xx answer (an {@link ApiRequestError} of status ≥ 500: the API may have
 *   applied the request before the error, e.g. 503 `store.commit_unknown`, a gateway's 502/504), the
 *   request is sent again (to the next URL, or in a later round) only if the route allows it (see
 *   {@link DriverApiClient}) AND `resendAfter(failure)` is true; otherwise the call rejects with that
 *   failure. The Driver loop passes `(f) => f instanceof ApiUnavailableError && f.delivery === "not_sent"`
 *   for the long-poll, whose lost answer a blind resend would not recover.
 */
export interface DriverCallOptions {
  signal?: AbortSignal | undefined;
  resendAfter?: ((failure: ApiUnavailableError | ApiRequestError) => boolean) | undefined;
  /**
   * This call's retry budget in ms, instead of the policy's `budgetMs` (the backoff and jitter stay
   * the policy's, and the retry count is then unbounded): a provider's result is reported for the
   * Driver's result-report budget. Ignored on a non-idempotent route (never retried).
   */
  budgetMs?: number | undefined;
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
  /** The route table's `idempotent`: resent after any retryable failure, on the next URL after `api.unreachable`. */
  idempotent: boolean;
  timeoutMs?: number;
  signal?: AbortSignal | undefined;
  resendAfter?: ((failure: ApiUnavailableError | ApiRequestError) => boolean) | undefined;
  budgetMs?: number | undefined;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/**
 * A typed HTTP client of the Driver protocol over `fetch`, over one or several API instances. Every
 * request body is checked against the contracts' zod schema before it is sent and every response is
 * validated on arrival (mismatch → {@link ApiContractError}). Non-2xx answers become
 * {@link ApiRequestError}; network failures and timeouts {@link ApiUnavailableError}.
 *
 * Retries and fail-over (the per-route table is in the Driver's README):
 * - one **round** sends the request to the current URL of the shared {@link ApiEndpointPool} and, on
 *   `api.unreachable`, at once (no delay) to each other URL not yet tried in this round; the pool's
 *   current URL moves on with it (sticky until failure). A 4xx, a 5xx or a contract error ends the
 *   round (a 5xx comes from a live instance: no fail-over);
 * - an **idempotent** route (the table's `idempotent`: every Driver route but `register`) is resent in
 *   the round whatever the failure, and p-retry repeats whole rounds with bounded exponential
 *   backoff ({@link ApiRetryOptions}) on {@link isRetryableApiError} failures: with one URL this is
 *   exactly the earlier single-URL behaviour;
 * - a **non-idempotent** route (`register`) has one round and no backoff retry; in the round it is
 *   sent to the next URL only after a failure that proves the request never left
 *   (`delivery: "not_sent"`: connection refused, DNS); after an ambiguous one (reset, timeout) it is
 *   not resent anywhere, since the first instance may have registered it;
 * - a call's `resendAfter` ({@link DriverCallOptions}) can only narrow these rules, after `api.unreachable`
 *   and after a 5xx alike (the long-poll: never resent after a 5xx, whose answer may be lost).
 */
export class DriverApiClient implements DriverApi {
  private readonly retryOptions: ApiRetryOptions;
  private readonly requestTimeoutMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly endpoints: ApiEndpointPool;

  constructor(private readonly options: DriverApiClientOptions) {
    this.endpoints = options.endpoints ?? new ApiEndpointPool(options.apiUrls, options.logger);
    this.retryOptions = { ...DEFAULT_API_RETRY, ...options.retry };
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** The API base URL requests go to now (the pool's current URL). */
  get currentApiUrl(): string {
    return this.endpoints.current;
  }

  /** A copy of this client that authenticates with `driverToken`, sharing this client's API URL pool. */
  withDriverToken(driverToken: string): DriverApiClient {
    return new DriverApiClient({ ...this.options, driverToken, endpoints: this.endpoints });
  }

  /**
   * Sends Driver-protocol route `name` of the table: its body (and query) checked against the table's
   * schemas first ({@link ApiContractError} `request`, nothing sent), the path parameters
   * percent-encoded, the enrollment token on `register` and the Driver's own token elsewhere, and
   * the answer checked against the table's response schema. Retried and failed over as the class
   * doc says. A long-poll (`waitMs` in the query) gets `waitMs` more than the per-request timeout.
   * @throws ApiUnavailableError (`api.unreachable`) when no URL answered (after the retries, if any);
   *   ApiRequestError for a non-2xx answer; ApiContractError for a request or answer off the contract.
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
      idempotent: route.idempotent,
      ...(waitMs > 0 ? { timeoutMs: waitMs + this.requestTimeoutMs } : {}),
      signal: options.signal,
      resendAfter: options.resendAfter,
      budgetMs: options.budgetMs,
    }) as Promise<RouteOutput<DriverRoute<N>>>;
  }

  private async request<S extends z.ZodType>(spec: RequestSpec<S>): Promise<z.output<S>> {
    if (!spec.idempotent) return this.round(spec);
    const { minTimeoutMs, maxTimeoutMs } = this.retryOptions;
    const retries = spec.budgetMs === undefined ? this.retryOptions.retries : Number.POSITIVE_INFINITY;
    const budgetMs = spec.budgetMs ?? this.retryOptions.budgetMs;
    const retryable = (error: Error): boolean =>
      isRetryableApiError(error) &&
      (error instanceof ApiUnavailableError ? mayResend(spec, error) : (spec.resendAfter?.(error as ApiRequestError) ?? true));
    return pRetry(() => this.round(spec), {
      retries,
      minTimeout: minTimeoutMs,
      maxTimeout: maxTimeoutMs,
      maxRetryTime: budgetMs,
      randomize: true,
      signal: spec.signal,
      shouldRetry: ({ error }) => retryable(error),
      onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
        if (!retryable(error) || retriesLeft === 0) return;
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

  /**
   * One fail-over round (see the class doc): the current URL first, then every other URL once, as
   * long as attempts fail with `api.unreachable` and the route may be resent.
   * @throws ApiUnavailableError naming every URL tried when none answered.
   */
  private async round<S extends z.ZodType>(spec: RequestSpec<S>): Promise<z.output<S>> {
    const tried = new Set<string>();
    const failures: ApiUnavailableError[] = [];
    for (let url = this.endpoints.nextUntried(tried); url !== undefined; url = this.endpoints.nextUntried(tried)) {
      if (failures.length > 0) this.options.logger?.debug({ route: spec.route, apiUrl: url, attempt: failures.length + 1 }, "api.resend");
      tried.add(url);
      try {
        return await this.attempt(spec, url);
      } catch (error) {
        if (!(error instanceof ApiUnavailableError)) throw error;
        failures.push(error);
        this.endpoints.reportUnreachable(url, spec.route, error);
        if (!mayResend(spec, error)) break;
      }
    }
    throw summarize(spec, failures);
  }

  private async attempt<S extends z.ZodType>(spec: RequestSpec<S>, baseUrl: string): Promise<z.output<S>> {
    // When traced, the request continues the active trace (the command's) on the API: W3C headers.
    const headers: Record<string, string> = { accept: "application/json", ...currentTraceContext() };
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
      const response = await this.fetchImpl(`${baseUrl}${spec.path}`, {
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
      throw new ApiUnavailableError(`${spec.method} ${spec.route} failed on ${baseUrl}: ${reason}`, {
        cause: error,
        delivery: deliveryOfFetchFailure(error, timeout.aborted),
        apiUrl: baseUrl,
        reason,
      });
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
 * Whether a request may be sent again after `failure`: an idempotent route after any unreachable
 * failure, another (`register`) only when the request provably never left (`not_sent`:
 * a repeat could mint a second instance); and never when the call's own `resendAfter` says no.
 */
function mayResend(spec: Pick<RequestSpec<z.ZodType>, "idempotent" | "resendAfter">, failure: ApiUnavailableError): boolean {
  if (!spec.idempotent && failure.delivery !== "not_sent") return false;
  return spec.resendAfter?.(failure) ?? true;
}

/**
 * The error of a round in which no URL answered: the one failure itself, or one error naming every
 * URL tried with its reason (`delivery` `not_sent` only when no attempt may have been delivered).
 */
function summarize(spec: Pick<RequestSpec<z.ZodType>, "method" | "route">, failures: ApiUnavailableError[]): ApiUnavailableError {
  const last = failures.at(-1) as ApiUnavailableError;
  if (failures.length === 1) return last;
  const reasons = failures.map((f) => `${f.apiUrl ?? "?"}: ${f.reason}`).join("; ");
  return new ApiUnavailableError(`${spec.method} ${spec.route} failed on ${failures.length} API URLs: ${reasons}`, {
    cause: last,
    delivery: failures.every((f) => f.delivery === "not_sent") ? "not_sent" : "unknown",
    apiUrl: last.apiUrl,
    reason: reasons,
  });
}

/**
 * Checks an outgoing body against the shared JSON rules (`findJsonProblem`: depth, forbidden keys,
 * well-formed strings) and then its contract schema, so the Driver never sends what
 * the API would refuse. @throws ApiContractError (`request`).
 */
function checkRequest<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const problem = findJsonProblem(body);
  if (problem) throw new ApiContractError("request", `request is invalid: ${formatJsonProblem(problem)}`);
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new ApiContractError("request", `request is invalid: ${formatZodIssues(parsed.error)}`);
  return parsed.data;
}
