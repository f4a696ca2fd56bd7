// What the host accepts from an adapter's untrusted process (the reply schemas) and how it repeats it (logs, one-line errors, frozen declarations).
import { z } from "zod";
import type { AdapterLogger } from "@mosoo/effect-reconciliation";
import type { Redactor } from "./adapter-sandbox.redaction.js";

/** What a process reports besides the declaration, checked before the host believes it. */
export const BoundReportSchema = z.strictObject({
  coverage: z.strictObject({ covered: z.array(z.string().max(256)).max(1000), notCovered: z.array(z.string().max(256)).max(1000) }),
});

/**
 * The child program's first reply line, `{"ready": true, "cpuMs": n}`: it has started, and its CPU time then (ms,
 * user + system, read before any adapter code runs). Anything else with a `ready` key breaks the protocol.
 */
export const ReadyLineSchema = z.strictObject({ ready: z.literal(true), cpuMs: z.number().finite().nonnegative() });

/** One log entry an adapter wrote during a call, replayed by the host (see {@link replay}). */
const LogSchema = z.object({ level: z.enum(["debug", "info", "warn", "error"]), fields: z.unknown(), message: z.string() });
/** A reply as the host accepts it from an untrusted process (anything else kills the process). */
export const ReplySchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("bound"), declaration: z.unknown(), plansCompensation: z.boolean(), coverage: z.unknown() }),
  z.object({ kind: z.literal("refused"), code: z.string().max(64), message: z.string() }),
  z.object({ kind: z.literal("answered"), json: z.string().nullable(), logs: z.array(LogSchema).max(100) }),
  z.object({ kind: z.literal("unanswerable"), reason: z.string(), logs: z.array(LogSchema).max(100) }),
  z.object({ kind: z.literal("threw"), error: z.string(), logs: z.array(LogSchema).max(100) }),
]);

/** Replays one adapter log entry on `logger`, bounded and redacted; logging never changes an outcome. */
export function replay(logger: AdapterLogger, log: z.infer<typeof LogSchema>, redactor: Redactor): void {
  try {
    // redacted before it is flattened and cut (a credential may span lines, or the cut)
    logger[log.level](redactor.fields(log.fields), redactor.text(log.message).replace(/\s+/g, " ").trim());
  } catch {
    // logging never changes an outcome
  }
}

/** `value` (an error's message, or its string) as one line of at most 300 characters, for a refusal message. */
export function oneLine(value: unknown): string {
  let text: string;
  try {
    text = value instanceof Error ? value.message : String(value);
  } catch {
    text = "unprintable error";
  }
  const line = text.slice(0, 2_000).replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

/** Freezes `value` and everything it holds (objects and arrays), so an adapter's declaration cannot be changed after its check. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
