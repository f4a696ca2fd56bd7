/** Named operator credentials (held as sha-256 digests only) and the identity an operator acts under. */
import { createHash, timingSafeEqual } from "node:crypto";
import { OPERATOR_SCOPES, type OperatorScope } from "@mosoo/contracts";
import { UserFacingError } from "../../../kernel/user-facing-error.js";

/**
 * Who acts on the operator surface: the `name` of the credential that
 * authenticated the request (1–64 of `[A-Za-z0-9._-]`; the audit trail's `actor`, never a field of
 * the request) and what it may do (`scopes`, each once).
 */
export interface OperatorIdentity {
  readonly name: string;
  readonly scopes: readonly OperatorScope[];
}

/** One configured operator credential: its identity and the sha-256 digest (32 bytes) of its token; the token itself is not kept. */
export interface OperatorCredential extends OperatorIdentity {
  readonly tokenSha256: Buffer;
}

/** The sha-256 digest (32 bytes) of a token, the only form in which operator tokens are held in memory. */
export function tokenDigest(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/**
 * The operator credentials of this process. {@link identify} compares a presented token with every
 * credential's digest in constant time (`timingSafeEqual` over sha-256 digests, no early exit), so
 * the time taken says nothing about which credential, if any, matched or how much of it did.
 * Names and digests are unique (the configuration refuses duplicates before this is built).
 */
export class OperatorCredentials {
  private readonly credentials: readonly OperatorCredential[];

  constructor(credentials: readonly OperatorCredential[]) {
    this.credentials = credentials.map((c) => ({ name: c.name, scopes: [...c.scopes], tokenSha256: Buffer.from(c.tokenSha256) }));
  }

  /** Whether any operator credential is configured (without one the operator routes and the console are off). */
  get configured(): boolean {
    return this.credentials.length > 0;
  }

  /** The credential names, in configuration order (for the startup log; never a token). */
  get names(): string[] {
    return this.credentials.map((c) => c.name);
  }

  /** The identity whose token is `token`, or undefined when it matches none. Constant time in the token's content. */
  identify(token: string): OperatorIdentity | undefined {
    const given = tokenDigest(token);
    let found: OperatorIdentity | undefined;
    for (const c of this.credentials) {
      if (timingSafeEqual(given, c.tokenSha256)) found ??= { name: c.name, scopes: c.scopes };
    }
    return found;
  }
}

/** True when `identity` holds every scope of {@link OPERATOR_SCOPES} (a full operator: deletes, Driver registration). */
export function isFullOperator(identity: OperatorIdentity): boolean {
  return OPERATOR_SCOPES.every((s) => identity.scopes.includes(s));
}

/**
 * Refuses an operator action the credential has no scope for.
 * @throws UserFacingError `auth.scope` (403), naming the scope (never the token).
 */
export function requireOperatorScope(identity: OperatorIdentity, scope: OperatorScope): void {
  if (!identity.scopes.includes(scope))
    throw new UserFacingError("auth.scope", `the operator credential ${identity.name} lacks the ${scope} scope`);
}
