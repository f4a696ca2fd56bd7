/** Operator identities and credentials for tests (the service takes an identity; the HTTP app takes credentials). */
import { OPERATOR_SCOPES, type OperatorScope } from "@mosoo/contracts";
import { OperatorCredentials, tokenDigest, type OperatorIdentity } from "../../src/modules/operator/domain/operator-credential.js";

/** The identity of an operator credential named `name` with `scopes` (default: every scope). */
export function operatorNamed(name: string, scopes: readonly OperatorScope[] = OPERATOR_SCOPES): OperatorIdentity {
  return { name, scopes };
}

/** Operator credentials for an HTTP app (`buildHttpApp(runtime, { operators })`): each `name` with its `token` and `scopes` (default every scope). */
export function operatorCredentials(
  list: ReadonlyArray<{ name: string; token: string; scopes?: readonly OperatorScope[] }>,
): OperatorCredentials {
  return new OperatorCredentials(
    list.map((c) => ({ name: c.name, scopes: c.scopes ?? OPERATOR_SCOPES, tokenSha256: tokenDigest(c.token) })),
  );
}
