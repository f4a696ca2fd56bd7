/** Runs the official MCP conformance kit against the fixture provider (server side) and the Driver's MCP client (client side). */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startFixtureProvider } from "@mosoo/fixture-provider";
import { CLAIMED_SCENARIOS, NOT_OFFERED, type ConformanceSide } from "./expected-results.js";

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const driverRoot = join(here, "..", "..");
/** The kit's CLI (`@modelcontextprotocol/conformance`, pinned at 0.1.13: later versions need Node 22's `fs.globSync`). */
const KIT_CLI = createRequire(import.meta.url).resolve("@modelcontextprotocol/conformance/dist/index.js");
const CLIENT_RUNNER = join(here, "conformance-client.main.ts");
/** Bound of one kit process (ms): a hung kit fails its scenarios instead of the run hanging. */
const KIT_PROCESS_TIMEOUT_MS = 180_000;

/**
 * How a scenario's result counts: `claimed` (a claimed scenario passed), `ours` (a claimed or an
 * unlisted scenario failed: the run fails), `not_offered` (a listed scenario failed, with its reason),
 * `unclaimed_pass` (a scenario nobody claims passed; shown, never counted).
 */
type ConformanceVerdict = "claimed" | "ours" | "not_offered" | "unclaimed_pass";

/** One scenario's result. `result` is `pass` when no check failed and at least one succeeded, `no_checks` when the kit recorded none. */
interface ConformanceRow {
  side: ConformanceSide;
  scenario: string;
  result: "pass" | "fail" | "no_checks";
  /** Checks by status (the kit's SUCCESS, FAILURE and WARNING; INFO is not counted). */
  passed: number;
  failed: number;
  warnings: number;
  verdict: ConformanceVerdict;
  /** One line: the reason a scenario is not offered, or the first failed check's message. */
  reason: string;
}

/** The rows of a run (server rows first) and whether it holds: no row is `ours`. */
export interface ConformanceReport {
  rows: ConformanceRow[];
  ok: boolean;
}

/** Options of {@link runMcpConformance}. */
export interface RunMcpConformanceOptions {
  /** The sides to run; default both. */
  sides?: readonly ConformanceSide[];
  /** Run (client) or report (server) only the claimed scenarios; default false (every scenario of the kit). */
  onlyClaimed?: boolean;
  /** The kit's per-scenario timeout for the client under test, ms; default 30 000 (the kit's default). */
  clientTimeoutMs?: number;
  /** Progress lines (one per kit process); default none. */
  log?: (line: string) => void;
}

/** One check as the kit saves it in `checks.json` (only the fields read here). */
export interface KitCheck {
  /** `SUCCESS`, `FAILURE`, `WARNING` or `INFO`. */
  status: string;
  errorMessage?: string;
}

/**
 * Runs the kit offline (it starts its own local servers; nothing leaves 127.0.0.1). Server side: a
 * fixture provider on a free port with a throwaway database, the kit's active server suite against
 * it. Client side: one kit process per scenario, each running `conformance-client.main.ts` (the
 * Driver's `McpConnections`). Each result is judged against {@link CLAIMED_SCENARIOS} and
 * {@link NOT_OFFERED}; a claimed scenario the kit did not report counts as a failure.
 * Never throws for a failing scenario (it is a row); throws when the fixture provider cannot start,
 * when `conformance list` fails, or when the Node or script path holds a space (the kit splits its
 * client command on spaces).
 */
export async function runMcpConformance(options: RunMcpConformanceOptions = {}): Promise<ConformanceReport> {
  const sides = options.sides ?? ["server", "client"];
  const workDir = mkdtempSync(join(tmpdir(), "mcp-conformance-"));
  try {
    const rows: ConformanceRow[] = [];
    if (sides.includes("server")) rows.push(...(await runServerSide(workDir, options)));
    if (sides.includes("client")) rows.push(...(await runClientSide(workDir, options)));
    return { rows, ok: rows.every((row) => row.verdict !== "ours") };
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

async function runServerSide(workDir: string, options: RunMcpConformanceOptions): Promise<ConformanceRow[]> {
  const provider = await startFixtureProvider({ dbFile: join(workDir, "fixture.sqlite") });
  const outDir = join(workDir, "server");
  try {
    options.log?.(`server: kit against ${provider.url}`);
    await runKit(["server", "--url", provider.url, "-o", outDir]);
  } finally {
    await provider.close();
  }
  const checks = new Map<string, KitCheck[]>();
  for (const entry of safeReaddir(outDir)) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
    if (scenario !== undefined) checks.set(scenario, readChecks(join(outDir, entry)));
  }
  for (const scenario of CLAIMED_SCENARIOS.server) if (!checks.has(scenario)) checks.set(scenario, []);
  const wanted = options.onlyClaimed ? CLAIMED_SCENARIOS.server : [...checks.keys()];
  return wanted.map((scenario) => judgeScenario("server", scenario, checks.get(scenario) ?? []));
}

async function runClientSide(workDir: string, options: RunMcpConformanceOptions): Promise<ConformanceRow[]> {
  if (/\s/.test(process.execPath + CLIENT_RUNNER))
    throw new Error("the kit splits its client command on spaces: move the checkout to a path without spaces");
  const command = `${process.execPath} --import tsx ${CLIENT_RUNNER}`;
  const scenarios = options.onlyClaimed ? CLAIMED_SCENARIOS.client : await listClientScenarios();
  const rows: ConformanceRow[] = [];
  for (const [index, scenario] of scenarios.entries()) {
    const outDir = join(workDir, `client-${index}`);
    options.log?.(`client: ${scenario}`);
    const timeout = String(options.clientTimeoutMs ?? 30_000);
    await runKit(["client", "--command", command, "--scenario", scenario, "--timeout", timeout, "-o", outDir]);
    rows.push(judgeScenario("client", scenario, readChecks(outDir)));
  }
  return rows;
}

/** The client scenarios the kit lists (`conformance list`, section "Client scenarios"). */
async function listClientScenarios(): Promise<string[]> {
  const { stdout } = await run(process.execPath, [KIT_CLI, "list"], { cwd: driverRoot, timeout: KIT_PROCESS_TIMEOUT_MS });
  const section = stdout.split(/^Client scenarios.*$/m)[1] ?? "";
  return [...section.matchAll(/^\s*-\s+(\S+)\s*$/gm)].map((match) => match[1] ?? "").filter((name) => name !== "");
}

/** Runs the kit; its exit status is ignored (the results are read from its output directory). */
async function runKit(args: string[]): Promise<void> {
  await run(process.execPath, [KIT_CLI, ...args], { cwd: driverRoot, timeout: KIT_PROCESS_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 }).catch(
    () => undefined,
  );
}

/** Every check the kit saved under `dir` (each scenario writes a `checks.json`); none when the kit wrote nothing. */
function readChecks(dir: string): KitCheck[] {
  const files = safeReaddir(dir, true).filter((name) => name === "checks.json" || name.endsWith("/checks.json"));
  return files.flatMap((file) => {
    try {
      const parsed: unknown = JSON.parse(readFileSync(join(dir, file), "utf8"));
      return Array.isArray(parsed) ? parsed.filter((check): check is KitCheck => typeof check?.status === "string") : [];
    } catch {
      return [];
    }
  });
}

function safeReaddir(dir: string, recursive = false): string[] {
  try {
    return readdirSync(dir, { recursive, encoding: "utf8" });
  } catch {
    return [];
  }
}

/**
 * Judges one scenario's checks against {@link CLAIMED_SCENARIOS} and {@link NOT_OFFERED}: a claimed
 * scenario that does not pass, or an unlisted one that fails (or recorded no check), is `ours`.
 */
export function judgeScenario(side: ConformanceSide, scenario: string, checks: KitCheck[]): ConformanceRow {
  const passed = checks.filter((check) => check.status === "SUCCESS").length;
  const failed = checks.filter((check) => check.status === "FAILURE").length;
  const warnings = checks.filter((check) => check.status === "WARNING").length;
  const result = failed > 0 ? "fail" : passed > 0 ? "pass" : "no_checks";
  const notOffered = Object.hasOwn(NOT_OFFERED[side], scenario) ? NOT_OFFERED[side][scenario] : undefined;
  const firstFailure = oneLine(checks.find((check) => check.status === "FAILURE")?.errorMessage ?? "the kit recorded no check");
  let verdict: ConformanceVerdict;
  let reason: string;
  if (CLAIMED_SCENARIOS[side].includes(scenario)) {
    verdict = result === "pass" ? "claimed" : "ours";
    reason = result === "pass" ? "" : `claimed but ${result}: ${firstFailure}`;
  } else if (notOffered !== undefined) {
    verdict = result === "pass" ? "unclaimed_pass" : "not_offered";
    reason = notOffered;
  } else {
    verdict = result === "pass" ? "unclaimed_pass" : "ours";
    reason = result === "pass" ? "passes; not claimed" : `not in the expected list, ${result}: ${firstFailure}`;
  }
  return { side, scenario, result, passed, failed, warnings, verdict, reason };
}

function oneLine(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}

/** The report as a plain-text table (scenario, side, result with check counts, verdict, reason) and one summary line per side. */
export function formatConformanceTable(report: ConformanceReport): string {
  const cells = report.rows.map((row) => [
    row.scenario,
    row.side,
    `${row.result} (${row.passed}/${row.passed + row.failed}${row.warnings ? `, ${row.warnings} warn` : ""})`,
    row.verdict,
    row.reason,
  ]);
  const header = ["scenario", "side", "result (checks passed/total)", "verdict", "reason"];
  const widths = header.map((title, i) => Math.max(title.length, ...cells.map((line) => (line[i] ?? "").length)));
  const format = (line: string[]): string =>
    line
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  const lines = [format(header), format(widths.map((width) => "-".repeat(width))), ...cells.map(format)];
  for (const side of ["server", "client"] as const) {
    const rows = report.rows.filter((row) => row.side === side);
    if (rows.length === 0) continue;
    const count = (verdict: ConformanceVerdict): number => rows.filter((row) => row.verdict === verdict).length;
    lines.push(
      `${side}: ${rows.filter((row) => row.result === "pass").length} passed, ${rows.filter((row) => row.result !== "pass").length} failed` +
        ` (claimed ${count("claimed")}/${CLAIMED_SCENARIOS[side].length}, ours ${count("ours")}, not offered ${count("not_offered")}, unclaimed passes ${count("unclaimed_pass")})`,
    );
  }
  return lines.join("\n");
}
