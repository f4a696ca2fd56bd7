/**
 * The lifecycle rules of docs/DESIGN.md §3 written down independently of `src` (the test oracle the
 * model test and the crash lab both check against; never import the machines under test here).
 */

/** docs/DESIGN.md §3: the only single-step status changes of an effect. */
export const EFFECT_STEPS: Record<string, readonly string[]> = {
  intent: ["executing"],
  // executing → not_executed only by a missed send-by deadline report (rule 12: nothing was sent)
  executing: ["succeeded", "unknown", "not_executed"],
  unknown: ["succeeded", "not_executed"],
  succeeded: [],
  not_executed: [],
};

/** Command statuses that are a terminal receipt. */
export const TERMINAL_COMMAND: ReadonlySet<string> = new Set(["completed", "failed", "expired", "cancelled"]);

/** Effect statuses that are final. */
export const SETTLED_EFFECT: ReadonlySet<string> = new Set(["succeeded", "not_executed"]);
