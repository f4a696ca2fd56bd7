/** The list of generated docs, each with its path and its text as the generators produce it now. */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { openApiDocument } from "../../src/entry/http/openapi.js";
import { renderConfiguration } from "./configuration.doc.js";
import { renderErrors } from "./errors.doc.js";
import { PublishedHistoryRunsSchema, PublishedRunSchema, renderPerformance, type PublishedRun } from "./performance.doc.js";

/** The repository's root folder (absolute). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
/** The committed copy of the bench run docs/performance.md shows. */
export const PUBLISHED_RUN_FILE = join(REPO_ROOT, "apps/api/bench/published-run.json");
/**
 * The committed copies of the history-only bench runs at a size beyond the full run's (`--only history
 * --history-effects <n>`, one run per store), shown by docs/performance.md after the published run.
 */
export const PUBLISHED_HISTORY_FILE = join(REPO_ROOT, "apps/api/bench/published-history-runs.json");

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
  const history = readHistoryRuns();
  return [
    { file: join(REPO_ROOT, "docs/configuration.md"), text: renderConfiguration() },
    { file: join(REPO_ROOT, "docs/errors.md"), text: renderErrors() },
    { file: join(REPO_ROOT, "docs/performance.md"), text: renderPerformance(run, history) },
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

/** The runs of {@link PUBLISHED_HISTORY_FILE} (none when there is no such file). @throws ZodError when it holds something else. */
function readHistoryRuns(): PublishedRun[] {
  let text: string;
  try {
    text = readFileSync(PUBLISHED_HISTORY_FILE, "utf8");
  } catch {
    return [];
  }
  return PublishedHistoryRunsSchema.parse(JSON.parse(text));
}

/**
 * Publishes history-only bench results (`--only history`, one per store) as `target` ({@link PUBLISHED_HISTORY_FILE}),
 * replacing what it held: docs/performance.md shows their tables after the published run's.
 * @throws ZodError when a file is not a bench result; Error `docs.not_history_run` when its table holds a row other than the history rows.
 */
export function publishHistoryRuns(files: readonly string[], target: string = PUBLISHED_HISTORY_FILE): void {
  const runs = files.map((file) => PublishedRunSchema.parse(JSON.parse(readFileSync(file, "utf8"))));
  for (const [i, run] of runs.entries()) {
    const rows = run.table.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| scenario"));
    if (rows.some((l) => !/^\| 4 (PostgreSQL )?history/.test(l)))
      throw new Error(`docs.not_history_run: ${files[i]} has rows other than the history rows (run it with --only history)`);
  }
  writeFileSync(target, `${JSON.stringify(runs, null, 2)}\n`);
}
