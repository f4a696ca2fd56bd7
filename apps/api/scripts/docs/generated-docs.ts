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
  const history = readPublishedHistoryRuns();
  return [
    { file: join(REPO_ROOT, "docs/configuration.md"), text: renderConfiguration() },
    { file: join(REPO_ROOT, "docs/errors.md"), text: renderErrors() },
    { file: join(REPO_ROOT, "docs/performance.md"), text: renderPerformance(run, history) },
    { file: join(REPO_ROOT, "docs/openapi.json"), text: openApiText() },
  ];
}

/**
 * Reads one `npm run bench` result (`var/bench/<timestamp>.json`): the fields docs/performance.md shows.
 * @throws Error `docs.not_bench_run: <file>: <why>` when it cannot be read, is not JSON or is not a bench result.
 */
export function readBenchRun(file: string): PublishedRun {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new Error(`docs.not_bench_run: ${file}: ${(err as Error).message.split("\n")[0]}`);
  }
  const run = PublishedRunSchema.safeParse(value);
  if (!run.success) {
    const issue = run.error.issues[0];
    throw new Error(
      `docs.not_bench_run: ${file}: not a bench result (${issue?.path.join(".") || "the top level"}: ${issue?.message ?? "invalid"})`,
    );
  }
  return run.data;
}

/** Publishes one bench result read by {@link readBenchRun}: writes it as {@link PUBLISHED_RUN_FILE}. */
export function writePublishedRun(run: PublishedRun): void {
  writeFileSync(PUBLISHED_RUN_FILE, `${JSON.stringify(run, null, 2)}\n`);
}

/** The runs of {@link PUBLISHED_HISTORY_FILE} (none when there is no such file). @throws ZodError when it holds something else. */
function readPublishedHistoryRuns(): PublishedRun[] {
  let text: string;
  try {
    text = readFileSync(PUBLISHED_HISTORY_FILE, "utf8");
  } catch {
    return [];
  }
  return PublishedHistoryRunsSchema.parse(JSON.parse(text));
}

/**
 * Checks history-only bench results (`--only history`, at most one per store) for publishing: each must be a
 * full-size run (not QUICK) of one store with at least one row, every row a history row.
 * @returns the runs, in the order given.
 * @throws Error `docs.not_bench_run` (see {@link readBenchRun}) or `docs.not_history_run: <file>: <why>`.
 */
export function readHistoryRuns(files: readonly string[]): PublishedRun[] {
  const runs = files.map(readBenchRun);
  const stores = new Set<string>();
  runs.forEach((run, i) => {
    const refuse = (why: string) => new Error(`docs.not_history_run: ${files[i]}: ${why}`);
    const rows = run.table.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| scenario"));
    if (rows.length === 0) throw refuse("its table has no rows");
    if (rows.some((l) => !/^\| 4 (PostgreSQL )?history/.test(l)))
      throw refuse("it has rows other than the history rows (run it with --only history)");
    if (run.quick) throw refuse("a QUICK run (MOSOO_BENCH_QUICK=1): its figures are not comparable");
    if (run.store !== "sqlite" && run.store !== "postgres")
      throw refuse(`one run per store (--store sqlite or postgres), not ${run.store}`);
    if (stores.has(run.store)) throw refuse(`a second ${run.store} run: publish one per store`);
    stores.add(run.store);
  });
  return runs;
}

/**
 * Publishes history-only bench results ({@link readHistoryRuns}) as `target` ({@link PUBLISHED_HISTORY_FILE}),
 * replacing what it held: docs/performance.md shows their tables after the published run's.
 * @throws Error `docs.not_bench_run` / `docs.not_history_run` (nothing written).
 */
export function publishHistoryRuns(files: readonly string[], target: string = PUBLISHED_HISTORY_FILE): void {
  writeHistoryRuns(readHistoryRuns(files), target);
}

/** Writes history-only runs read by {@link readHistoryRuns} as `target` ({@link PUBLISHED_HISTORY_FILE}). */
export function writeHistoryRuns(runs: readonly PublishedRun[], target: string = PUBLISHED_HISTORY_FILE): void {
  writeFileSync(target, `${JSON.stringify(runs, null, 2)}\n`);
}
