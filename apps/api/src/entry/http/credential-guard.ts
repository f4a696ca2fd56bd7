// Identifies a request's bearer credential (operator, API key, enrollment token, Driver instance) and guards each route by it.
import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { DriverTokenSchema, type RouteAuth } from "@mosoo/contracts";
import type { ApiKey, ApiKeyScope } from "../../config/api-keys.contract.js";
import { UserFacingError } from "../../kernel/user-facing-error.js";
import type { Runtime } from "../../composition-root.js";
import type { DriverInstanceRow } from "../../modules/drivers/application/driver-instance.service.js";
import {
  isFullOperator,
  OperatorCredentials,
  tokenDigest,
  type OperatorIdentity,
} from "../../modules/operator/domain/operator-credential.js";
import { OPERATOR_SCOPES, type OperatorScope } from "@mosoo/contracts";
import { UNRESTRICTED_CALLER, type RunCaller } from "../../modules/runs/domain/run-access.js";

/**
 * Who a bearer credential belongs to (docs/DESIGN.md §10): a named operator credential (its name
 * and scopes: `MOSOO_OPERATOR_TOKEN` or the operator credentials file), an API key of the run API (by name, with its scopes), the Driver enrollment token
 * (`MOSOO_DRIVER_ENROLLMENT_TOKEN`), or one Driver instance (its own token, whatever its status).
 */
export type Principal =
  | { kind: "operator"; operator: OperatorIdentity }
  | { kind: "api_key"; name: string; scopes: readonly ApiKeyScope[]; drivers: readonly string[] | undefined }
  | { kind: "enrollment" }
  | { kind: "driver"; instance: DriverInstanceRow };

/** The credentials the HTTP layer accepts; secrets are held in memory only, as sha-256 digests. */
export interface HttpAuthOptions {
  /** The named operator credentials (operator routes and console; a full operator also deletes and registers Drivers). */
  operators?: OperatorCredentials | undefined;
  /**
   * Shorthand for one operator credential named `operator` with every scope (what `MOSOO_OPERATOR_TOKEN`
   * alone configures); ignored when `operators` is given.
   */
  operatorToken?: string | undefined;
  /** The run API's keys. */
  apiKeys?: readonly ApiKey[] | undefined;
  /** `MOSOO_DRIVER_ENROLLMENT_TOKEN` (registers a new Driver instance). */
  driverEnrollmentToken?: string | undefined;
  /** `GET /metrics` needs no credential. */
  metricsPublic?: boolean | undefined;
}

/** Hono variables set by the guard: the authenticated principal (and, on Driver routes, the instance). */
export type AuthEnv = { Variables: { principal: Principal; driver: DriverInstanceRow } };

const digest = (s: string): Buffer => createHash("sha256").update(s, "utf8").digest();

/** The operator credentials `opts` configures: `operators`, else `operatorToken` as `operator` with every scope, else none. */
export function operatorCredentialsOf(opts: Pick<HttpAuthOptions, "operators" | "operatorToken">): OperatorCredentials {
  if (opts.operators) return opts.operators;
  if (!opts.operatorToken) return new OperatorCredentials([]);
  return new OperatorCredentials([{ name: "operator", scopes: OPERATOR_SCOPES, tokenSha256: tokenDigest(opts.operatorToken) }]);
}

/**
 * Reads `Authorization: Bearer <token>`; the scheme is case-insensitive (`bearer`, `BEARER`), as
 * HTTP auth schemes are (RFC 9110 §11.1).
 * @throws UserFacingError `auth.missing_token` (401) when there is no header, another scheme, or no token.
 */
function readBearer(header: string | undefined): string {
  const m = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "");
  if (!m?.[1]) throw new UserFacingError("auth.missing_token", "send Authorization: Bearer <credential>");
  return m[1];
}

/**
 * Identifies bearer credentials and builds the per-route guards (hono middleware). Every secret is
 * compared in constant time (`timingSafeEqual` over sha-256 digests, every configured secret each
 * time); a Driver token is checked against the stored sha-256 of that instance's token.
 * Refusals, in this order, and nothing is written by any of them:
 * - 401 `auth.missing_token`: no `Authorization: Bearer` credential;
 * - 401 `auth.invalid_token`: a credential that is none of the configured ones;
 * - 403 `auth.forbidden`: a valid credential of the wrong kind for the route (e.g. a Driver token on the run API);
 * - 403 `auth.scope`: an API key without the route's scope, or an operator credential without the
 *   route's operator scope (`read` for `/metrics`; every scope for deletes and Driver registration).
 * No message says more than the code (which secret was compared, what the key may do).
 */
export class CredentialGuard {
  private readonly operators: OperatorCredentials;
  private readonly enrollment: Buffer | undefined;
  private readonly keys: Array<{ key: ApiKey; hash: Buffer }>;
  private readonly metricsPublic: boolean;

  constructor(
    private readonly runtime: Runtime,
    opts: HttpAuthOptions,
  ) {
    this.operators = operatorCredentialsOf(opts);
    this.enrollment = opts.driverEnrollmentToken ? digest(opts.driverEnrollmentToken) : undefined;
    this.keys = (opts.apiKeys ?? []).map((key) => ({ key, hash: digest(key.secret) }));
    this.metricsPublic = opts.metricsPublic === true;
  }

  /** Whether an operator credential is configured (the operator routes answer 403 `auth.operator_disabled` without one). */
  get operatorConfigured(): boolean {
    return this.operators.configured;
  }

  /** The principal of `token`, or undefined when it matches no configured secret and no Driver instance. */
  async identify(token: string): Promise<Principal | undefined> {
    const given = digest(token);
    // Compare against every secret (no early exit), so the time does not depend on which one matched.
    const operator = this.operators.identify(token);
    let found: Principal | undefined = operator ? { kind: "operator", operator } : undefined;
    if (this.enrollment && timingSafeEqual(given, this.enrollment)) found ??= { kind: "enrollment" };
    for (const { key, hash } of this.keys) {
      if (timingSafeEqual(given, hash)) found ??= { kind: "api_key", name: key.name, scopes: key.scopes, drivers: key.drivers };
    }
    if (found) return found;
    if (!DriverTokenSchema.safeParse(token).success) return undefined;
    const instance = await this.runtime.drivers.verifyToken(token);
    return instance ? { kind: "driver", instance } : undefined;
  }

  /** Authenticates the request's bearer credential. @throws UserFacingError `auth.missing_token`, `auth.invalid_token` (401). */
  private async principalOf(header: string | undefined): Promise<Principal> {
    const principal = await this.identify(readBearer(header));
    if (!principal) throw new UserFacingError("auth.invalid_token", "the credential is not valid");
    return principal;
  }

  private guard(check: (p: Principal) => void): MiddlewareHandler<AuthEnv> {
    return createMiddleware<AuthEnv>(async (c, next) => {
      const principal = await this.principalOf(c.req.header("authorization"));
      check(principal);
      c.set("principal", principal);
      if (principal.kind === "driver") c.set("driver", principal.instance);
      await next();
    });
  }

  /**
   * The run API: an API key with `scope`, or, when `operatorScope` is given, an operator credential
   * with that operator scope (`full`: every scope).
   */
  apiKey(scope: ApiKeyScope, operatorScope?: OperatorScope | "full"): MiddlewareHandler<AuthEnv> {
    return this.guard((p) => {
      if (operatorScope !== undefined && p.kind === "operator") return assertOperatorScope(p.operator, operatorScope);
      if (p.kind !== "api_key") throw forbidden();
      if (!p.scopes.includes(scope))
        throw new UserFacingError("auth.scope", `the API key ${p.name} lacks the ${scope} scope this route needs`);
    });
  }

  /**
   * The Driver protocol: one Driver instance's own token; a finalized instance answers 409
   * `driver.finalized` (it must register again), as before.
   */
  driver(): MiddlewareHandler<AuthEnv> {
    return this.guard((p) => {
      if (p.kind !== "driver") throw forbidden();
      if (p.instance.status === "finalized" || p.instance.status === "finalizing") {
        throw new UserFacingError("driver.finalized", `Driver instance ${p.instance.id} was finalized; register again`);
      }
    });
  }

  /**
   * A Driver's reports about its own past attempts (`complete`, `deadline-missed`, `late-result`):
   * one Driver instance's own token, accepted even when the instance was finalized meanwhile (its
   * heartbeat expired while a call was in flight: lease loss). The provider's real result, or the
   * proof that nothing was sent, must not be lost because the instance ended (see `decideDeadlineMissed` and
   * `decideLateEvidence` in effect-lifecycle.machine.ts). The ledger takes a finalized instance's report only from the connection that made the
   * attempt (`assertCurrentConnection` refuses any other: the instance is no longer connected), and
   * judges it against the effect as stored (a fenced effect's `complete` is `rejected`).
   */
  driverReport(): MiddlewareHandler<AuthEnv> {
    return this.guard((p) => {
      if (p.kind !== "driver") throw forbidden();
    });
  }

  /**
   * `POST /v1/drivers/register`: the enrollment token, a full operator credential (every scope), or a
   * Driver instance's own token (which may only re-register that instance; the service checks which
   * instance).
   */
  registration(): MiddlewareHandler<AuthEnv> {
    return this.guard((p) => {
      if (p.kind === "api_key") throw forbidden();
      if (p.kind === "operator") assertOperatorScope(p.operator, "full");
    });
  }

  /** The operator routes: any operator credential (each route then checks its own scope). */
  operatorOnly(): MiddlewareHandler<AuthEnv> {
    return this.guard((p) => {
      if (p.kind !== "operator") throw forbidden();
    });
  }

  /**
   * The guard of a table route's `auth` (`API_ROUTES` of `@mosoo/contracts`): `public` none; `metrics`
   * {@link metrics}; `api_key` {@link apiKey}; `registration` {@link registration}; `driver` {@link driver}.
   * `operator` and `console_session` routes are guarded by their path prefix's middleware
   * (`/api/operator/*`: `auth.operator_disabled`, the token, the feature flag, in that order;
   * `/console/api/*`: the session and CSRF checks), so none is added here.
   */
  forRoute(auth: RouteAuth): MiddlewareHandler<AuthEnv>[] {
    switch (auth.kind) {
      case "public":
      case "operator":
      case "console_session":
        return [];
      case "metrics":
        return [this.metrics()];
      case "api_key":
        return [this.apiKey(auth.scope, auth.operatorToo === true ? "full" : undefined)];
      case "registration":
        return [this.registration()];
      case "driver":
        return [this.driver()];
      case "driver_report":
        return [this.driverReport()];
    }
  }

  /** `GET /metrics`: open with `MOSOO_METRICS_PUBLIC=on`; else an operator credential with `read` or an API key with `metrics:read`. */
  metrics(): MiddlewareHandler<AuthEnv> {
    const guarded = this.apiKey("metrics:read", "read");
    return createMiddleware<AuthEnv>(async (c, next) => (this.metricsPublic ? next() : guarded(c, next)));
  }
}

/**
 * Refuses an API key restricted to other Driver instances (`drivers` in the keys file): creating a
 * run on, or purging, a Driver it does not list. The operator and unrestricted keys pass. (Runs and
 * sessions it may not reach answer 404 instead: `reachesRun`, `reachesSession`.)
 * @throws UserFacingError `auth.forbidden` (403).
 */
export function assertDriversAllowed(principal: Principal, driverInstanceIds: readonly string[]): void {
  if (principal.kind !== "api_key" || !principal.drivers) return;
  const allowed = principal.drivers;
  if (driverInstanceIds.some((id) => !allowed.includes(id))) throw forbidden();
}

/**
 * The run API's view of `principal`: an API key by its name and Driver
 * restriction (it owns the sessions it creates); anything else (an operator) reaches every run and session.
 */
export function callerOf(principal: Principal): RunCaller {
  return principal.kind === "api_key" ? { keyName: principal.name, drivers: principal.drivers } : UNRESTRICTED_CALLER;
}

/** @throws UserFacingError `auth.scope` (403) when `operator` lacks `scope` (`full`: any of the scopes); the message names the credential and the scope (never the token). */
function assertOperatorScope(operator: OperatorIdentity, scope: OperatorScope | "full"): void {
  if (scope === "full" ? !isFullOperator(operator) : !operator.scopes.includes(scope))
    throw new UserFacingError(
      "auth.scope",
      scope === "full"
        ? `the operator credential ${operator.name} lacks a scope this route needs (it needs all of ${OPERATOR_SCOPES.join(", ")})`
        : `the operator credential ${operator.name} lacks the ${scope} scope this route needs`,
    );
}

function forbidden(): UserFacingError {
  return new UserFacingError("auth.forbidden", "this credential may not use this route");
}
