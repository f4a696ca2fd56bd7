/**
 * `node dist/scenario.main.js` (compiled) or `node --import tsx scenario.main.ts <scenario> <optionsJson> <outFile>`: runs ONE bench scenario
 * in this process (so its peak RSS and heap are its own) and writes its result as JSON to
 * `outFile`. Scenarios: `ledger` ({@link runLedgerCost}), `recovery` ({@link runRecovery}),
 * `repair` ({@link runRepair}), `history` ({@link runHistory}); on PostgreSQL `pg-ledger` ({@link runPgLedgerCost}), `pg-history` ({@link runPgHistory}), `pg-recovery`
 * ({@link runPgRecovery}) and `pg-recovery-instance` (one API instance of it, {@link runPgRecoveryInstance},
 * started by `pg-recovery` with an IPC channel). Progress goes to stderr.
 */
import { writeFileSync } from "node:fs";
import { dropDatabasesOnSignal } from "./pg-bench.harness.js";
import { runLedgerCost, type LedgerCostOptions } from "./ledger-cost.scenario.js";
import { runRecovery, type RecoveryOptions } from "./recovery-throughput.scenario.js";
import { runRepair, type RepairOptions } from "./finalization-repair.scenario.js";
import { runPgLedgerCost, type PgLedgerCostOptions } from "./pg-ledger-cost.scenario.js";
import { runHistory, type HistoryOptions } from "./history-store.scenario.js";
import { runPgHistory, type PgHistoryOptions } from "./pg-history.scenario.js";
import { runPgRecovery, runPgRecoveryInstance, type PgRecoveryInstanceOptions, type PgRecoveryOptions } from "./pg-recovery.scenario.js";

const [scenario, optionsJson, outFile] = process.argv.slice(2);
if (!scenario || !optionsJson || !outFile) throw new Error("usage: scenario.main.ts <scenario> <optionsJson> <outFile>");
const options = JSON.parse(optionsJson) as unknown;
// a stopped bench must leave no database on the server (an operator's, with --database-url)
if (scenario.startsWith("pg-")) dropDatabasesOnSignal();
let result: unknown;
switch (scenario) {
  case "ledger":
    result = await runLedgerCost(options as LedgerCostOptions);
    break;
  case "recovery":
    result = await runRecovery(options as RecoveryOptions);
    break;
  case "repair":
    result = await runRepair(options as RepairOptions);
    break;
  case "history":
    result = await runHistory(options as HistoryOptions);
    break;
  case "pg-ledger":
    result = await runPgLedgerCost(options as PgLedgerCostOptions);
    break;
  case "pg-history":
    result = await runPgHistory(options as PgHistoryOptions);
    break;
  case "pg-recovery":
    result = await runPgRecovery(options as PgRecoveryOptions);
    break;
  case "pg-recovery-instance":
    result = await runPgRecoveryInstance(options as PgRecoveryInstanceOptions);
    break;
  default:
    throw new Error(`unknown scenario ${scenario}`);
}
writeFileSync(outFile, JSON.stringify(result));
// an instance process of `pg-recovery` holds an IPC channel open: close it so the process can exit
if (process.connected) process.disconnect();
