/** The list of generated docs, each with its path and its text as the generators produce it now. */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { openApiDocument } from "../../src/entry/http/openapi.js";
import { renderConfiguration } from "./configuration.doc.js";
import { renderErrors } from "./errors.doc.js";
import { PublishedRunSchema, renderPerformance } from "./performance.doc.js";

/** The repository's root folder (absolute). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
/** The committed copy of the bench run docs/performance.md shows. */
export const PUBLISHED_RUN_FILE = join(REPO_ROOT, "apps/api/bench/published-run.json");

/** The OpenAPI document as docs/openapi.json holds it (two-space JSON, final newline). */
export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(), null, 2)}\n`;
}

/**
 * Every generated doc: `{file, text}` with `file` absolute. Deterministic for a given tree.
 * @throws Error `docs.note_missing` / `docs.note_stale` from a generator whose hand-written notes do not match its list.
 */
export function generatedDocs(): Array<{ file: string; text: string }> {
  const run = PublishedRunSchema.parse(JSON.parse(readFileSync(PUBLISHED_RUN_FILE, "utf8")));
  return [
    { file: join(REPO_ROOT, "docs/configuration.md"), text: renderConfiguration() },
    { file: join(REPO_ROOT, "docs/errors.md"), text: renderErrors() },
    { file: join(REPO_ROOT, "docs/performance.md"), text: renderPerformance(run) },
    { file: join(REPO_ROOT, "docs/openapi.json"), text: openApiText() },
  ];
}

/**
 * Publishes one `npm run bench` result (`var/bench/<timestamp>.json`): copies the fields docs/performance.md
 * reads to {@link PUBLISHED_RUN_FILE}.
 * @throws ZodError when `file` is not a bench result.
 */
export function publishBenchRun(file: string): void {
  const run = PublishedRunSchema.parse(JSON.parse(readFileSync(file, "utf8")));
  writeFileSync(PUBLISHED_RUN_FILE, `${JSON.stringify(run, null, 2)}\n`);
}
