import { describe, expect, it } from "vitest";
import { EFFECT_STATUSES, OPERATOR_ATTENTION_REASONS } from "@mosoo/contracts";
import { settleTransition, type SettleResolution, type SettledStatus } from "../src/modules/ledger/domain/effect-lifecycle.machine.js";

// The one lifecycle machine owns every settling transition (docs/DESIGN.md §3 rule 15): the
// reconciler's outcome, the operator's resolve and the Driver's evidence all take their columns here.
describe("effect lifecycle machine: settleTransition", () => {
  const allowed: Array<[SettleResolution, string, SettledStatus]> = [
    ["reconciled", "unknown", "succeeded"],
    ["reconciled", "unknown", "not_executed"],
    ["operator", "unknown", "succeeded"],
    ["operator", "unknown", "not_executed"],
    ["reported_late", "unknown", "succeeded"],
    ["deadline_missed", "executing", "not_executed"],
    ["deadline_missed", "unknown", "not_executed"],
  ];

  it("allows exactly the transitions of the design and refuses every other (from, to, resolution)", () => {
    const resolutions: SettleResolution[] = ["reconciled", "operator", "reported_late", "deadline_missed"];
    const targets: SettledStatus[] = ["succeeded", "not_executed"];
    let refused = 0;
    for (const resolution of resolutions) {
      for (const from of EFFECT_STATUSES) {
        for (const to of targets) {
          const ok = allowed.some(([r, f, t]) => r === resolution && f === from && t === to);
          const call = () => settleTransition({ status: from, operatorAttention: null }, to, resolution);
          if (ok) {
            expect(call()).toEqual({ status: to, resolution, nextLookupAtMs: null, operatorAttention: null });
          } else {
            expect(call).toThrow(/is not a transition of the machine/);
            refused += 1;
          }
        }
      }
    }
    expect(refused).toBe(4 * 5 * 2 - allowed.length);
  });

  it("a provider lookup or an operator clears every attention flag; a Driver's evidence clears only lookup_bound_reached", () => {
    for (const attention of OPERATOR_ATTENTION_REASONS) {
      const current = { status: "unknown" as const, operatorAttention: attention };
      expect(settleTransition(current, "succeeded", "reconciled").operatorAttention).toBeNull();
      expect(settleTransition(current, "not_executed", "operator").operatorAttention).toBeNull();
      const kept = attention === "lookup_bound_reached" ? null : attention;
      expect(settleTransition(current, "succeeded", "reported_late").operatorAttention).toBe(kept);
      expect(settleTransition(current, "not_executed", "deadline_missed").operatorAttention).toBe(kept);
    }
  });
});
