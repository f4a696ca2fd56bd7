#!/usr/bin/env node
/**
 * `npm run conformance`: the official MCP conformance kit against the fixture provider and the
 * Driver's MCP client; prints the results table and exits 1 when a claimed scenario fails or an
 * unlisted one fails (expected-results.ts lists the claims and what is not offered).
 */
import { Command } from "commander";
import { formatConformanceTable, runMcpConformance } from "./mcp-conformance.js";

const program = new Command("conformance")
  .description(
    "Runs the official MCP conformance kit (offline) against the fixture provider (server scenarios) and the Driver's MCP client " +
      "(client scenarios); prints the results table; exits 1 when a claimed scenario fails or an unlisted one fails",
  )
  .exitOverride();
try {
  program.parse();
} catch (error) {
  process.exit((error as { exitCode?: number }).exitCode === 0 ? 0 : 2);
}

runMcpConformance({ log: (line) => process.stderr.write(`${line}\n`) }).then(
  (report) => {
    process.stdout.write(`${formatConformanceTable(report)}\n`);
    process.exit(report.ok ? 0 : 1);
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`conformance: ${message.split("\n")[0]}\n`);
    process.exit(1);
  },
);
