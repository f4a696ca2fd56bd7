// Builds the run API's view of a run: its commands, effects with attempts and lookup records, and events.
import type { StoreTx } from "../../../platform/db/store.port.js";
import { parseJsonColumn } from "../../../platform/db/json-column.js";
import { runRepository, type RunRow } from "../infrastructure/run.repository.js";
import { commandTables } from "../../ledger/application/owned-tables.port.js";
import { effectRows } from "../../ledger/application/effect-rows.service.js";
import type { ReconciliationRecordsPort } from "./reconciliation-records.port.js";

const parse = parseJsonColumn;

/** A run as the run API shows it: the run, its commands, its effects with attempts and reconciliation records, and its events. Times in ms. */
export type RunView = Awaited<ReturnType<typeof toRunView>>;

/** `rows` by their `effectId`, each group in `rows` order. */
function byEffect<R extends { effectId: string }>(rows: readonly R[]): Map<string, R[]> {
  const groups = new Map<string, R[]>();
  for (const row of rows) {
    const group = groups.get(row.effectId);
    if (group) group.push(row);
    else groups.set(row.effectId, [row]);
  }
  return groups;
}

/**
 * Builds the {@link RunView} of `run` (reads only, through `tx`; the reconciliation records through
 * `recordsPort`): a fixed number of reads whatever the number of effects (the attempts and the
 * records of the whole run are each read once and grouped by effect here).
 */
export async function toRunView(tx: StoreTx, run: RunRow, recordsPort: ReconciliationRecordsPort) {
  const commands = await commandTables().listByRun(tx, run.id);
  const attemptsOf = byEffect(await effectRows.listAttemptsByRun(tx, run.id));
  const recordsOf = byEffect(await recordsPort.listRecordsOfRun(tx, run.id));
  const effects = (await effectRows.listByRun(tx, run.id)).map((e) => ({
    e,
    attempts: attemptsOf.get(e.id) ?? [],
    records: recordsOf.get(e.id) ?? [],
  }));
  const events = await runRepository.listEvents(tx, run.id, 0);
  return {
    run: {
      id: run.id,
      sessionId: run.sessionId,
      driverInstanceId: run.driverInstanceId,
      status: run.status,
      error: parse(run.errorJson),
      createdAtMs: run.createdAtMs,
      updatedAtMs: run.updatedAtMs,
    },
    commands: commands.map((c) => ({
      id: c.id,
      seq: c.seq,
      type: c.type,
      status: c.status,
      payload: parse(c.payloadJson),
      result: parse(c.resultJson),
      error: parse(c.errorJson),
      deliveryCount: c.deliveryCount,
      terminalAtMs: c.terminalAtMs,
    })),
    effects: effects.map(({ e, attempts, records }) => ({
      id: e.id,
      commandId: e.commandId,
      serverId: e.serverId,
      toolName: e.toolName,
      idempotencyKey: e.idempotencyKey,
      requestFingerprint: e.requestFingerprint,
      status: e.status,
      resolution: e.resolution,
      version: e.version,
      attemptCount: e.attemptCount,
      lookupCount: e.lookupCount,
      nextLookupAtMs: e.nextLookupAtMs,
      operatorAttention: e.operatorAttention,
      reconciliationReceipt: parse(e.reconciliationReceiptJson),
      updatedAtMs: e.updatedAtMs,
      result: parse(e.resultJson),
      providerReceipt: parse(e.providerReceiptJson),
      attempts: attempts.map((a) => ({
        attempt: a.attempt,
        status: a.status,
        connectionId: a.connectionId,
        unknownReason: a.unknownReason,
        startedAtMs: a.startedAtMs,
        finishedAtMs: a.finishedAtMs,
      })),
      reconciliations: records.map((r) => ({
        id: r.id,
        adapterId: r.adapterId,
        adapterVersion: r.adapterVersion,
        adapterPackage: r.adapterPackage,
        adapterPackageVersion: r.adapterPackageVersion,
        adapterDeclarationHash: r.adapterDeclarationHash,
        trigger: r.trigger,
        outcome: r.outcome,
        reasonCode: r.reasonCode,
        receipt: parse(r.receiptJson),
        result: parse(r.resultJson),
        error: r.error,
        startedAtMs: r.startedAtMs,
        finishedAtMs: r.finishedAtMs,
        nextLookupAtMs: r.nextLookupAtMs,
      })),
    })),
    events: events.map((ev) => ({ seq: ev.seq, type: ev.type, terminal: ev.terminal, payload: parse(ev.payloadJson) })),
  };
}
