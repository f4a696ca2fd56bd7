/**
 * The frame every ledger model command runs in: {@link step} (count, trace, run, then check every
 * invariant), {@link guard} (a typed UserFacingError is an allowed answer), the run trace and a
 * canonical JSON form for comparing results.
 */
import type fc from "fast-check";
import { UserFacingError } from "../../../src/kernel/user-facing-error.js";
import { START_MS, bump, checkInvariants, figures, type Model, type World } from "../ledger-model-world.js";

/** A model command: it reads and updates the {@link Model} and drives the real system in the {@link World}. */
export type Cmd = fc.AsyncCommand<Model, World>;

export function trace(w: World, line: string): void {
  w.trace.push(`t+${w.clock.now() - START_MS}ms ${line}`);
}

/** Runs `fn`; a typed UserFacingError is an allowed answer (counted), anything else fails the property. */
export async function guard<T>(w: World, label: string, fn: () => T | Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof UserFacingError) {
      bump(figures.runtimeErrors, err.code);
      trace(w, `  ${label} → UserFacingError ${err.code}`);
      return undefined;
    }
    trace(w, `  ${label} → THREW ${String(err)}`);
    throw err;
  }
}

/** One model step: run, then check every invariant. */
export async function step(w: World, m: Model, label: string, body: () => Promise<void>): Promise<void> {
  bump(figures.commands, label.split("(")[0]!);
  trace(w, label);
  await body();
  await checkInvariants(w, m, label);
}

/** The items of `items` for which `keep` resolves true, in order (one at a time: reads of one store). */
export async function filterAsync<T>(items: readonly T[], keep: (item: T) => Promise<boolean>): Promise<T[]> {
  const out: T[] = [];
  for (const item of items) if (await keep(item)) out.push(item);
  return out;
}

export function canon(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canon).join(",")}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canon(o[k])}`)
    .join(",")}}`;
}
