/** An operator identity for tests that call the operator service directly (as the HTTP layer does after authenticating). */
import { OPERATOR_SCOPES, type OperatorScope } from "@mosoo/contracts";
import type { OperatorIdentity } from "../../src/modules/operator/domain/operator-credential.js";

/** The identity of an operator credential named `name` with `scopes` (default: every scope). */
export function operatorNamed(name: string, scopes: readonly OperatorScope[] = OPERATOR_SCOPES): OperatorIdentity {
  return { name, scopes };
}
