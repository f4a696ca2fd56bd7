import { createHash } from "node:crypto";
import canonicalize from "canonicalize";
import { z } from "zod";
import type { AdapterDeclaration } from "./adapter.contract.js";

/**
 * Where an adapter factory's code lives (DESIGN.md §4, "Adapters are installable"): `module`, a
 * module specifier resolved from the host's installed dependencies (e.g. `@acme/payments-adapter`)
 * or an absolute path, and `export`, the name of the exported {@link ReconciliationAdapterFactory}.
 * The same shape names a built-in (the host maps its id to one) and a package in a bindings file,
 * and it is what an isolated caller (a worker) loads the adapter from.
 */
export const AdapterSourceSchema = z.strictObject({
  module: z.string().min(1).max(512),
  export: z.string().regex(/^[A-Za-z_$][A-Za-z0-9_$]{0,127}$/, "export must be a JavaScript identifier"),
});
/** See {@link AdapterSourceSchema}. */
export type AdapterSource = z.infer<typeof AdapterSourceSchema>;

/**
 * What is recorded with every lookup and outcome of a loaded adapter (DESIGN.md §4):
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
