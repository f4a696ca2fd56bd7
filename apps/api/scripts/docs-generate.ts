/**
 * `npm run docs:generate`: writes the generated docs (docs/configuration.md, docs/errors.md,
 * docs/performance.md, docs/openapi.json) from the contracts, the code lists and the published bench run.
 * `--check`: writes nothing; lists each stale file and exits 1 (not with `--bench`/`--bench-history`: refused). `--bench <file>`: first publishes that bench
 * result (`var/bench/latest.json` after `npm run bench`) as apps/api/bench/published-run.json.
 * `--bench-history <file>` (repeatable, one per store): publishes history-only results (`npm run bench -- --only
 * history --history-effects <n>`) as apps/api/bench/published-history-runs.json, shown after the published run.
 * Bad options: one line, exit 2.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import {
  generatedDocs,
  PUBLISHED_HISTORY_FILE,
  PUBLISHED_RUN_FILE,
  readBenchRun,
  readHistoryRuns,
  writeHistoryRuns,
  writePublishedRun,
} from "./docs/generated-docs.js";
import type { PublishedRun } from "./docs/performance.doc.js";

const USAGE = `usage: npm run docs:generate [-- --check] [-- --bench <run.json>] [-- --bench-history <run.json> ...]
  (no option)              write the generated docs (configuration, errors, performance, OpenAPI)
  --check                  write nothing; exit 1 naming each stale doc (CI's check)
  --bench <file>           first publish that bench result (var/bench/latest.json after npm run bench)
  --bench-history <file>   first publish history-only results (--only history, one per store; repeat the option)`;

let values: { check?: boolean; bench?: string; "bench-history"?: string[]; help?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      check: { type: "boolean" },
      bench: { type: "string" },
      "bench-history": { type: "string", multiple: true },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  }));
} catch (err) {
  console.error(`docs-generate: ${(err as Error).message}\n${USAGE}`);
  process.exit(2);
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (values.check && (values.bench !== undefined || values["bench-history"] !== undefined)) {
  console.error("docs-generate: --check writes nothing, so it cannot publish: run --bench / --bench-history without --check");
  process.exit(2);
}
// every input is read and checked before anything is written
let published: { run?: PublishedRun; history?: PublishedRun[] };
try {
  published = {
    ...(values.bench ? { run: readBenchRun(values.bench) } : {}),
    ...(values["bench-history"] ? { history: readHistoryRuns(values["bench-history"]) } : {}),
  };
} catch (err) {
  console.error(`docs-generate: ${(err as Error).message}`);
  process.exit(2);
}
if (published.run) {
  writePublishedRun(published.run);
  console.log(`docs-generate: published ${values.bench} as ${PUBLISHED_RUN_FILE}`);
}
if (published.history) {
  writeHistoryRuns(published.history);
  console.log(`docs-generate: published ${values["bench-history"]!.join(", ")} as ${PUBLISHED_HISTORY_FILE}`);
}
const stale: string[] = [];
for (const doc of generatedDocs()) {
  const current = (() => {
    try {
      return readFileSync(doc.file, "utf8");
    } catch {
      return "";
    }
  })();
  if (current === doc.text) continue;
  if (values.check) stale.push(doc.file);
  else {
    writeFileSync(doc.file, doc.text);
    console.log(`docs-generate: wrote ${doc.file}`);
  }
}
if (stale.length) {
  console.error(`docs-generate: stale (run npm run docs:generate): ${stale.join(", ")}`);
  process.exit(1);
}
