// Where an adapter's code lives, why its sandbox killed it, its recorded provenance, and the declaration hash.
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";
import { z } from "zod";
import type { AdapterDeclaration } from "../author/adapter.contract.js";

/**
 * Where an adapter's code lives (loaded by
 * `loadAdapterModule` in adapter-loader.ts): `module` is a module specifier (a package name such as `@acme/mosoo-adapter`, resolved
 * from the host's installed dependencies) or an absolute file path (`.ts` files load through tsx);
 * `export` is the name of the module's export that holds a `ReconciliationAdapterFactory` (or a
 * discovering factory). The same shape names a built-in (the host maps its id to one) and a
 * `package` in a bindings file. The host never imports it on its own main thread: an
 * `AdapterHost` (adapter-host.contract.ts) loads it where adapter code runs (a worker). A strict object: unknown keys are refused.
 */
export const AdapterSourceSchema = z.strictObject({
  module: z.string().min(1).max(4096),
  export: z.string().regex(/^[A-Za-z_$][A-Za-z0-9_$]{0,127}$/, "export must be a JavaScript identifier (the factory's export name)"),
});
/** See {@link AdapterSourceSchema}. */
export type AdapterSource = z.infer<typeof AdapterSourceSchema>;

/**
 * Why an adapter's host terminated the code that ran an adapter call (docs/DESIGN.md §5, "crashes, hangs,
 * exits, exhausts memory, leaves async errors behind"):
 * - `crashed`: an uncaught exception or unhandled rejection (e.g. a throwing timer, a floating
 *   rejected promise) ended the adapter's process, or it broke the host's protocol;
 * - `exited`: the adapter called `process.exit` (or its process ended otherwise);
 * - `out_of_memory`: the process reached its heap limit or its resident-memory bound (killed);
 * - `cpu_limit`: the call used more CPU time than its bound (the process was killed);
 * - `timeout`: the host killed the process because the call outlived its bound (or was cancelled).
 */
export const ADAPTER_TERMINATION_REASONS = ["crashed", "exited", "out_of_memory", "cpu_limit", "timeout"] as const;
/** See {@link ADAPTER_TERMINATION_REASONS}. */
export type AdapterTerminationReason = (typeof ADAPTER_TERMINATION_REASONS)[number];

const CRASH_BRAND = Symbol.for("@mosoo/effect-reconciliation/AdapterCrashedError");

/**
 * Rejection of an isolated adapter call whose process died under it or was killed past a limit
 * (`reason` is `crashed`, `exited`, `out_of_memory` or `cpu_limit`): the reconcile step maps it to `still_unknown` / `adapter_crashed` (never to
 * `adapter_error`, which is an adapter that threw or rejected normally). `message` is one line.
 * Use {@link AdapterCrashedError.is} rather than `instanceof`.
 */
export class AdapterCrashedError extends Error {
  override readonly name = "AdapterCrashedError";
  /** Brand for {@link AdapterCrashedError.is}. */
  readonly [CRASH_BRAND] = true;
  /** @param reason how the worker ended; @param message one line naming it. */
  constructor(
    readonly reason: Exclude<AdapterTerminationReason, "timeout">,
    message: string,
  ) {
    super(message);
  }
  /** True for an {@link AdapterCrashedError} of any loaded copy of this package. */
  static is(value: unknown): value is AdapterCrashedError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[CRASH_BRAND] === true;
  }
}

const ANSWER_REFUSED_BRAND = Symbol.for("@mosoo/effect-reconciliation/AdapterAnswerRefusedError");

/**
 * Rejection of an isolated adapter call whose answer the host refused to copy back before any
 * schema could read it: larger than the host's size bound, or not JSON (a function, a cycle, a
 * BigInt). The reconcile step maps it to `still_unknown` / `invalid_adapter_output` with `message`
 * (one line naming the bound, e.g. `the answer is larger than 1114112 characters`) as the record's
 * error, so an operator sees the size bound, not a schema message about a value that was never read
 * (docs/DESIGN.md §5). Use {@link AdapterAnswerRefusedError.is} rather than `instanceof`.
 */
export class AdapterAnswerRefusedError extends Error {
  override readonly name = "AdapterAnswerRefusedError";
  /** Brand for {@link AdapterAnswerRefusedError.is}. */
  readonly [ANSWER_REFUSED_BRAND] = true;
  /** True for an {@link AdapterAnswerRefusedError} of any loaded copy of this package. */
  static is(value: unknown): value is AdapterAnswerRefusedError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[ANSWER_REFUSED_BRAND] === true;
  }
}

/**
 * What is recorded with every lookup and outcome of a loaded adapter:
 * - `source`: the {@link AdapterSource} it was loaded from;
 * - `packageName`, `packageVersion`: from the nearest `package.json` of the resolved module
 *   (`null` when there is none, e.g. a bare file);
 * - `declarationHash`: {@link declarationHash} of the validated declaration.
 */
export interface AdapterProvenance {
  source: AdapterSource;
  packageName: string | null;
  packageVersion: string | null;
  declarationHash: string;
}

/**
 * The hash recorded with every outcome: `sha256:` + lowercase hex sha-256 of the RFC 8785 canonical
 * JSON of the declaration (key order does not matter). Two adapters with the same hash declare the same thing.
 */
export function declarationHash(declaration: AdapterDeclaration): string {
  const canonical = canonicalize(declaration);
  if (canonical === undefined) throw new TypeError("declaration cannot be canonicalized as JSON");
  return `sha256:${createHash("sha256").update(canonical, "utf8").digest("hex")}`;
}
