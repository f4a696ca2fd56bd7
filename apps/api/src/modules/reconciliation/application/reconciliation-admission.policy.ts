// The reconciler's admission: which adapter covers an effect, whether a lookup is due, and whether one may start now.
import type { ReconciliationTrigger } from "@mosoo/contracts";
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import { checkEligibility } from "@mosoo/effect-reconciliation/host";
import type { ReconcileResult } from "../../ledger/application/effect-reconciliation.port.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import type { EffectRow } from "../../ledger/application/effect-rows.service.js";
import { noLookupReason } from "./binding-report.service.js";
import type { ReconciliationSettings } from "./reconciliation-settings.config.js";

/**
 * The reconciler's admission (docs/DESIGN.md §3 rules 4–5, §6): which adapter covers an effect, whether
 * an automatic lookup is due, and whether a lookup may start now for a trigger. Reads only the row
 * it is given and the settings; writes nothing.
 */
export class ReconciliationAdmission {
  constructor(
    private readonly ctx: RuntimeContext,
    private readonly settings: ReconciliationSettings,
  ) {}

  /** The adapter bound to the effect's server when reconciliation is on and the adapter declares the tool; else null. */
  adapterFor(effect: Pick<EffectRow, "serverId" | "toolName">): ReconciliationAdapter | null {
    if (!this.settings.enabled) return null;
    const adapter = this.settings.bindings.get(effect.serverId);
    if (!adapter || !adapter.declaration.tools.includes(effect.toolName)) return null;
    return adapter;
  }

  /**
   * Why effects of this server and tool get no lookup ("flag off", "no binding for server S",
   * "no lookup: tool X not declared by adapter Y"), or null when its adapter covers it or the effect is
   * already settled (`succeeded` / `not_executed`; see `noLookupReason`).
   */
  noLookupReason(effect: Pick<EffectRow, "serverId" | "toolName" | "status">): string | null {
    // a settled effect needs no lookup: saying why it "gets none" would contradict its lookup history
    if (effect.status === "succeeded" || effect.status === "not_executed") return null;
    return noLookupReason(this.settings, effect.serverId, effect.toolName);
  }

  /** True when an automatic lookup may run now: `unknown`, bound, and not held back by {@link scheduleBlocker}. */
  isDue(effect: EffectRow, nowMs: number): boolean {
    return effect.status === "unknown" && this.adapterFor(effect) !== null && this.scheduleBlocker(effect, nowMs) === null;
  }

  /**
   * Why an automatic trigger must not look the effect up now, or null: it waits for an operator
   * (`operator_attention`; an automatic lookup never clears that flag), it reached the lookup bound
   * (`lookup_bound_reached`), or its next lookup is not due yet (`not_due`).
   */
  private scheduleBlocker(effect: EffectRow, nowMs: number): "operator_attention" | "lookup_bound_reached" | "not_due" | null {
    if (effect.operatorAttention !== null) return "operator_attention";
    if (effect.lookupCount >= this.settings.maxLookups) return "lookup_bound_reached";
    if (effect.nextLookupAtMs !== null && effect.nextLookupAtMs > nowMs) return "not_due";
    return null;
  }

  /**
   * Why `effect` may not be looked up now for `trigger` (an `ineligible` result: `not_unknown`,
   * `flag_off`, `no_binding`, the eligibility check's reason code, or a schedule blocker; an operator
   * trigger is never held back by the schedule), or its adapter.
   */
  admit(
    effect: EffectRow | undefined,
    trigger: ReconciliationTrigger,
  ): { adapter: ReconciliationAdapter; effect: EffectRow } | Extract<ReconcileResult, { kind: "ineligible" }> {
    if (!effect || effect.status !== "unknown") return { kind: "ineligible", reasonCode: "not_unknown", effect };
    const adapter = this.adapterFor(effect);
    if (!adapter) return { kind: "ineligible", reasonCode: this.settings.enabled ? "no_binding" : "flag_off", effect };
    const verdict = checkEligibility(toReconcilable(effect), adapter.declaration, effect.serverId);
    if (!verdict.eligible) return { kind: "ineligible", reasonCode: verdict.reasonCode, effect };
    const blocker = trigger === "operator" ? null : this.scheduleBlocker(effect, this.ctx.clock.nowMs());
    if (blocker) return { kind: "ineligible", reasonCode: blocker, effect };
    return { adapter, effect };
  }
}

/** The effect as the reconcile step reads it. */
export function toReconcilable(effect: EffectRow) {
  return {
    effectId: effect.id,
    serverId: effect.serverId,
    toolName: effect.toolName,
    idempotencyKey: effect.idempotencyKey,
    requestFingerprint: effect.requestFingerprint,
    firstDispatchedAtMs: effect.firstDispatchedAtMs,
    lastDispatchedAtMs: effect.lastDispatchedAtMs,
    sendWithinMs: effect.sendWithinMs,
    taskId: effect.taskId,
  };
}
