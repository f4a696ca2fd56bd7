/**
 * `npm run docs:generate`: writes the generated docs (docs/configuration.md, docs/errors.md,
 * docs/performance.md, docs/openapi.json) from the contracts, the code lists and the published bench run.
 * `--check`: writes nothing; lists each stale file and exits 1. `--bench <file>`: first publishes that bench
 * result (`var/bench/latest.json` after `npm run bench`) as apps/api/bench/published-run.json.
 * Bad options: one line, exit 2.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { generatedDocs, PUBLISHED_RUN_FILE, publishBenchRun } from "./docs/generated-docs.js";

let values: { check?: boolean; bench?: string };
try {
  ({ values } = parseArgs({ options: { check: { type: "boolean" }, bench: { type: "string" } }, strict: true }));
} catch (err) {
  console.error(`docs-generate: ${(err as Error).message}`);
  process.exit(2);
}
if (values.bench) {
  publishBenchRun(values.bench);
  console.log(`docs-generate: published ${values.bench} as ${PUBLISHED_RUN_FILE}`);
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
