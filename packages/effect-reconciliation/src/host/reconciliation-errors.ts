/**
 * Typed errors of the adapter registry. All of them are configuration or boot-time errors of the
 * host (the API): none is retryable, none is ever raised for an adapter's runtime misbehaviour
 * (that becomes a `still_unknown` decision, see `reconcile.service.ts`, docs/DESIGN.md §5).
 * @module
 */

/**
 * The stable error codes of this package (docs/DESIGN.md §9: a code never changes meaning once shipped).
 * - `adapter.invalid_declaration`: a factory's or an adapter's declaration failed
 *   `AdapterDeclarationSchema` (message: the zod issues), or a factory built an adapter that
 *   is not one (no `lookup` function, or a declaration with another `id`/`version` than the factory's).
 * - `adapter.duplicate_id`: `register` was called twice with the same adapter `id` (see `AdapterRegistry` in adapter-registry.ts). `details.adapterId` names it.
 * - `adapter.unknown_id`: `resolve`/`instantiate` of an id nothing registered. `details.adapterId`.
 * - `adapter.invalid_options`: the factory refused the options it was given (message: the zod
 *   issues when the factory threw a `ZodError`, else the factory's error message). `details.adapterId`.
 * - `registry.closed`: `register` after `close()`: the set of adapters is fixed once the host starts.
 * - `adapter.load_failed`: an `AdapterHost` could not load an adapter source (module not found, no
 *   such export, the module threw while loading) or the code building it crashed, exited, ran out of
 *   memory or did not finish in time. `details.module`, `details.export`.
 * - `adapter.package_not_found`: an adapter source's `module` cannot be resolved from the host's
 *   installed dependencies (or fails to load). `details.module`.
 * - `adapter.export_missing`: the module loaded but has no such export, or the export is not an
 *   adapter factory (`{declaration, create}`). `details.module`, `details.export`.
 * - `binding.tool_not_declared`: a binding's `tools` names a tool the adapter does not declare.
 *   `details.adapterId`, `details.toolName`.
 * - `adapter.bundle_outside_package`: bundling the adapter would read a file outside its own package
 *   and the dependencies the package declares (an absolute or `../` import, a `paths`-like mapping,
 *   a glob import, a device or FIFO). Nothing is bound. `details.module`.
 * - `adapter.symlink_outside_package`: a symbolic link under the adapter's package folder points
 *   outside it and outside the dependencies it declares. Nothing is bound. `details.module`.
 * - `adapter.bundle_too_large`: bundling the adapter would bring in a file larger than 16 MiB, or
 *   files totalling more than 64 MiB (checked from their sizes before they are read). Nothing is
 *   bound. `details.module`.
 */
export const RECONCILIATION_ERROR_CODES = [
  "adapter.invalid_declaration",
  "adapter.duplicate_id",
  "adapter.unknown_id",
  "adapter.invalid_options",
  "registry.closed",
  "adapter.load_failed",
  "adapter.package_not_found",
  "adapter.export_missing",
  "binding.tool_not_declared",
  "adapter.bundle_outside_package",
  "adapter.symlink_outside_package",
  "adapter.bundle_too_large",
] as const;

/** One of {@link RECONCILIATION_ERROR_CODES}. */
export type ReconciliationErrorCode = (typeof RECONCILIATION_ERROR_CODES)[number];

const BRAND = Symbol.for("@mosoo/effect-reconciliation/ReconciliationError");

/**
 * The one error class of this package: `{name: "ReconciliationError", code, message, details, cause?}`.
 * `details` is a small JSON object (e.g. `{adapterId}`), never a stack trace. Use
 * {@link ReconciliationError.is} rather than `instanceof` when two copies of the package may be loaded.
 */
export class ReconciliationError extends Error {
  override readonly name = "ReconciliationError";
  /** The stable code; see {@link RECONCILIATION_ERROR_CODES} for the meaning of each. */
  readonly code: ReconciliationErrorCode;
  /** Small JSON details, e.g. `{adapterId: "github-issues"}`. */
  readonly details: Readonly<Record<string, unknown>>;
  /** Brand for {@link ReconciliationError.is}. */
  readonly [BRAND] = true;

  /**
   * @param code one of {@link RECONCILIATION_ERROR_CODES}.
   * @param message one human-readable line.
   * @param options `details` (JSON object, default `{}`) and the underlying `cause`, if any.
   */
  constructor(code: ReconciliationErrorCode, message: string, options: { details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = Object.freeze({ ...(options.details ?? {}) });
  }

  /**
   * True when `value` is a {@link ReconciliationError} (of any loaded copy of this package),
   * optionally with the given `code`.
   */
  static is(value: unknown, code?: ReconciliationErrorCode): value is ReconciliationError {
    if (typeof value !== "object" || value === null || (value as Record<symbol, unknown>)[BRAND] !== true) return false;
    return code === undefined || (value as ReconciliationError).code === code;
  }
}
