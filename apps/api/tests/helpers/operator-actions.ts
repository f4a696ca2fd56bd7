import { operatorNamed } from "../kit/index.js";
/**
 * The one place where tests call the operator surface (`OperatorService`) as an operator would.
 * When the operator API changes, adapt these two functions, not the tests that use them.
 */
import type { McpToolResult } from "@mosoo/contracts";
import type { Runtime } from "../../src/composition-root.js";

const AUDIT = { reason: "checked at the provider" };

/** The operator triggers a lookup now. Resolves to the reconcile outcome kind; throws UserFacingError (`effect.not_found`, `effect.not_reconcilable`). */
export async function operatorLookup(runtime: Runtime, effectId: string): Promise<string> {
  return (await runtime.operator.reconcile(effectId, AUDIT, operatorNamed("model-operator"))).outcome;
}

/**
 * The operator settles an `unknown` effect by hand with what they verified at the provider: the
 * provider's MCP tool result (`succeeded`) or that the write did not happen (`not_executed`).
 * Returns the effect's status after; throws UserFacingError `effect.not_found` / `effect.not_unknown`.
 */
export async function operatorResolve(
  runtime: Runtime,
  effectId: string,
  outcome: { succeeded: McpToolResult } | "not_executed",
): Promise<string> {
  if (outcome === "not_executed")
    return (await runtime.operator.resolve(effectId, { outcome: "not_executed", ...AUDIT }, operatorNamed("model-operator"))).status;
  return (
    await runtime.operator.resolve(
      effectId,
      { outcome: "succeeded", result: outcome.succeeded as Record<string, unknown>, ...AUDIT },
      operatorNamed("model-operator"),
    )
  ).status;
}
