/** Prints one human-readable timeline step of a scenario (the demo prints; tests may collect). */
export type Timeline = (step: string) => void;

/**
 * What a scenario ends with: the one JSON `line` the demo prints (e.g. `{"scenario": ...,
 * "providerWrites": 1, "effectStatus": "unknown", ...}`) and the invariants that did not hold
 * (`failures`, empty when all held).
 */
export interface ScenarioResult {
  line: Record<string, unknown>;
  failures: string[];
}

/** Options every scenario takes: a fresh working folder (SQLite files, state, config) and the timeline sink. */
export interface ScenarioOptions {
  workDir: string;
  timeline: Timeline;
}

/** Adds `message` to `failures` unless `ok`. */
export function expectInvariant(failures: string[], ok: boolean, message: string): void {
  if (!ok) failures.push(message);
}
