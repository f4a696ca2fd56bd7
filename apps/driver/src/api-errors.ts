// The Driver's API client errors (refused, unreachable, contract violation) and the tests that decide retry or stop.
import { ApiErrorBodySchema } from "@mosoo/contracts";

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

/**
 * What is known of a request that got no answer:
 * - `not_sent`: the connection was never established (refused, DNS failure, connect timeout), so no
 *   byte of the request reached an API instance; resending it anywhere cannot repeat anything;
 * - `unknown`: the request may have reached the API and may even have been applied (reset or closed
 *   mid-request, response timeout): only an idempotent route may be resent.
 */
export type ApiDelivery = "not_sent" | "unknown";

/** Options of {@link ApiUnavailableError}: the standard `cause`, plus what is known of the delivery and the URL tried. */
export interface ApiUnavailableErrorOptions extends ErrorOptions {
  /** Default `unknown` (the conservative answer). */
  delivery?: ApiDelivery | undefined;
  /** The API base URL the failed attempt went to (no credentials: the config refuses them). */
  apiUrl?: string | undefined;
  /** The low-level reason, e.g. `fetch failed (ECONNREFUSED)` or `timed out` (default: the message). */
  reason?: string | undefined;
}

/**
 * The API could not be reached (connection refused/reset, DNS, or the per-request timeout). Code
 * `api.unreachable`. `delivery` says whether the request may have been applied ({@link ApiDelivery});
 * `apiUrl` names the API base URL that did not answer and `reason` why (after a fail-over round over
 * several URLs, the last one; the message names every URL tried and its reason).
 */
export class ApiUnavailableError extends Error {
  override readonly name = "ApiUnavailableError";
  /** Stable error code. */
  readonly code = "api.unreachable";
  readonly delivery: ApiDelivery;
  readonly apiUrl: string | undefined;
  readonly reason: string;
  constructor(message: string, options: ApiUnavailableErrorOptions = {}) {
    const { delivery, apiUrl, reason, ...errorOptions } = options;
    super(message, errorOptions);
    this.delivery = delivery ?? "unknown";
    this.apiUrl = apiUrl;
    this.reason = reason ?? message;
  }
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

/**
 * System error codes of a failed `fetch` that prove the TCP connection was never established, so
 * nothing was sent: refused, DNS lookup failed (`ENOTFOUND`, `EAI_AGAIN`), undici's connect timeout.
 * Everything else (`ECONNRESET`, `UND_ERR_SOCKET` "other side closed", a response timeout, …) is
 * `unknown`: the request may have been read, even applied, by the API.
 */
const NOT_SENT_CODES: ReadonlySet<string> = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]);

/**
 * What a failed `fetch` tells about delivery ({@link ApiDelivery}): `not_sent` only when every
 * underlying system error (the `cause`, or each error of an `AggregateError` cause, as Node's
 * happy-eyeballs connect gives for a name with several addresses) is one of {@link NOT_SENT_CODES};
 * `unknown` otherwise, and always after a timeout.
 * @param error what `fetch` threw.
 * @param timedOut whether the per-request timeout fired.
 */
export function deliveryOfFetchFailure(error: unknown, timedOut: boolean): ApiDelivery {
  if (timedOut) return "unknown";
  const codes = systemErrorCodes(error);
  return codes.length > 0 && codes.every((code) => NOT_SENT_CODES.has(code)) ? "not_sent" : "unknown";
}

/** The `code`s of the system errors under a failed `fetch` (its `cause`, flattened through `AggregateError`). */
function systemErrorCodes(error: unknown): string[] {
  const cause = error instanceof Error ? (error as Error & { cause?: unknown }).cause : undefined;
  if (cause instanceof AggregateError && cause.errors.length > 0) return cause.errors.map(codeOf).filter((c): c is string => !!c);
  const code = codeOf(cause);
  return code ? [code] : [];
}

function codeOf(value: unknown): string | undefined {
  return value && typeof value === "object" && "code" in value && typeof value.code === "string" ? value.code : undefined;
}

/**
 * The {@link ApiRequestError} of a non-2xx answer: code, message and details from an
 * `{error: {code, message, details?}}` body, else code `http.<status>`.
 */
export function toApiRequestError(status: number, text: string, route: string): ApiRequestError {
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

/** One line on why `fetch` failed: its message plus the system error code of its cause, e.g. `fetch failed (ECONNREFUSED)`. */
export function describeFetchError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as Error & { cause?: unknown }).cause;
  const causeCode = cause && typeof cause === "object" && "code" in cause ? String((cause as { code: unknown }).code) : undefined;
  return causeCode ? `${error.message} (${causeCode})` : error.message;
}
