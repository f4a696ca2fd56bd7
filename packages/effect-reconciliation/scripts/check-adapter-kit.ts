/**
 * `npm run check:adapter-kit`: runs the conformance kit (`judgeAdapter`) against the reference probe
 * adapter and every planted-bug adapter (`PLANTED_BUGS`), each in every probe provider mode, and
 * prints per bug whether the kit caught it (and by which case in which mode). Exit 0 when the
 * reference passes every mode and every planted bug is caught; 1 otherwise; 2 on bad arguments.
 * Options: `--only <bug>` (repeatable), `--json` (one JSON line at the end), `--verbose` (every failing case of every mode).
 */
import { parseArgs } from "node:util";
import {
  createPlantedBugAdapter,
  createProbeAdapter,
  createProbeProvider,
  judgeAdapter,
  PLANTED_BUGS,
  PROBE_MODES,
  type KitReport,
  type PlantedBug,
} from "../src/testing/index.js";
import type { ReconciliationAdapter } from "../src/index.js";

type Build = (provider: ReturnType<typeof createProbeProvider>) => ReconciliationAdapter;

async function judgeEveryMode(name: string, build: Build): Promise<KitReport[]> {
  return Promise.all(
    PROBE_MODES.map((mode) => {
      const provider = createProbeProvider(mode);
      return judgeAdapter({ name, provider, createAdapter: () => build(provider), timeoutMs: 1_000 });
    }),
  );
}

function firstFailure(reports: KitReport[]): { mode: string; case: string; line: string } | undefined {
  for (const r of reports) {
    const c = r.cases.find((x) => x.status === "failed");
    if (c) return { mode: r.provider.replace(/^probe provider \((.*)\)$/, "$1"), case: c.case, line: c.failures[0]! };
  }
  return undefined;
}

async function main(): Promise<number> {
  let values: { only?: string[]; json?: boolean; verbose?: boolean };
  try {
    ({ values } = parseArgs({
      options: { only: { type: "string", multiple: true }, json: { type: "boolean" }, verbose: { type: "boolean" } },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`check-adapter-kit: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  const unknown = (values.only ?? []).filter((b) => !(PLANTED_BUGS as readonly string[]).includes(b));
  if (unknown.length > 0) {
    process.stderr.write(`check-adapter-kit: unknown planted bug ${unknown.join(", ")} (known: ${PLANTED_BUGS.join(", ")})\n`);
    return 2;
  }
  const bugs = (values.only as PlantedBug[] | undefined) ?? [...PLANTED_BUGS];

  const reference = await judgeEveryMode("probe-reference", (p) => createProbeAdapter(p));
  const referenceOk = reference.every((r) => r.passed);
  console.log(
    `reference adapter: ${referenceOk ? "passes every mode" : "FAILS"} (${reference.map((r) => `${r.provider}: ${r.passed ? "pass" : "fail"}`).join("; ")})`,
  );
  if (!referenceOk) {
    const f = firstFailure(reference);
    console.log(`  the kit wrongly fails the reference adapter: [${f?.mode}] ${f?.case}: ${f?.line}`);
  }
  console.log("");
  console.log(`${"planted bug".padEnd(34)} ${"caught".padEnd(7)} by (mode: case)`);
  const rows: Array<{ bug: string; caught: boolean; mode?: string; case?: string; line?: string }> = [];
  for (const bug of bugs) {
    const reports = await judgeEveryMode(`planted:${bug}`, (p) => createPlantedBugAdapter(bug, p));
    const f = firstFailure(reports);
    rows.push({ bug, caught: f !== undefined, ...(f ?? {}) });
    console.log(`${bug.padEnd(34)} ${(f ? "yes" : "NO").padEnd(7)} ${f ? `${f.mode}: ${f.case}` : "-"}`);
    if (f) console.log(`${"".padEnd(42)} ${f.line.slice(0, 150)}`);
    if (values.verbose)
      for (const r of reports)
        for (const c of r.cases)
          if (c.status === "failed") console.log(`${"".padEnd(42)} [${r.provider}] ${c.case}: ${c.failures[0]!.slice(0, 120)}`);
  }
  const slipped = rows.filter((r) => !r.caught).map((r) => r.bug);
  console.log("");
  console.log(
    slipped.length === 0
      ? `all ${rows.length} planted bugs caught`
      : `${slipped.length} of ${rows.length} planted bugs slipped through: ${slipped.join(", ")}`,
  );
  if (values.json)
    console.log(JSON.stringify({ referencePasses: referenceOk, caught: rows.length - slipped.length, planted: rows.length, slipped }));
  return referenceOk && slipped.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`check-adapter-kit: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
