/**
 * `node dist/scenario.main.js` (compiled) or `node --import tsx scenario.main.ts <scenario> <optionsJson> <outFile>`: runs ONE bench scenario
 * in this process (so its peak RSS and heap are its own) and writes its result as JSON to
 * `outFile`. Scenarios: `ledger` ({@link runLedgerCost}), `recovery` ({@link runRecovery}),
 * `repair` ({@link runRepair}). Progress goes to stderr.
 */
import { writeFileSync } from "node:fs";
import { runLedgerCost, type LedgerCostOptions } from "./ledger-cost.scenario.js";
import { runRecovery, type RecoveryOptions } from "./recovery-throughput.scenario.js";
import { runRepair, type RepairOptions } from "./finalization-repair.scenario.js";

const [scenario, optionsJson, outFile] = process.argv.slice(2);
if (!scenario || !optionsJson || !outFile) throw new Error("usage: scenario.main.ts <scenario> <optionsJson> <outFile>");
const options = JSON.parse(optionsJson) as unknown;
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
  default:
    throw new Error(`unknown scenario ${scenario}`);
}
writeFileSync(outFile, JSON.stringify(result));
