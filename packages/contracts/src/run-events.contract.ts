/**
 * Types of run events (the replayable stream of a run). `run.failed` and `run.completed` are
 * terminal: a run has at most one terminal event (a partial unique index enforces it).
 */
export const RUN_EVENT_TYPES = [
  "run.created",
  "tool_call.queued",
  "tool_call.completed",
  "tool_call.failed",
  "effect.fenced",
  "effect.reconciled",
  "effect.resolved",
  "run.failed",
  "run.completed",
] as const;
/** See {@link RUN_EVENT_TYPES}. */
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];
/** The terminal run event types. */
export const TERMINAL_RUN_EVENT_TYPES: readonly RunEventType[] = ["run.failed", "run.completed"];
