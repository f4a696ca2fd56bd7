import type { DbHandle } from "../../ledger/infrastructure/db-handle.js";
import { parseJsonColumn } from "../../../platform/db/json-column.js";
import { commandRepository } from "../../ledger/infrastructure/command.repository.js";
import { effectRepository } from "../../ledger/infrastructure/effect.repository.js";
import { runRepository, type RunRow } from "../../ledger/infrastructure/run.repository.js";
import { reconciliationRepository } from "../../ledger/infrastructure/effect-reconciliation.repository.js";

const parse = parseJsonColumn;

/** A run as the run API shows it: the run, its commands, its effects with attempts and reconciliation records, and its events. Times in ms. */
export type RunView = ReturnType<typeof toRunView>;

/** Builds the {@link RunView} of `run` (reads only). */
export function toRunView(db: DbHandle, run: RunRow) {
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
    commands: commandRepository.listByRun(db, run.id).map((c) => ({
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
    effects: effectRepository.listByRun(db, run.id).map((e) => ({
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
      attempts: effectRepository.listAttempts(db, e.id).map((a) => ({
        attempt: a.attempt,
        status: a.status,
        connectionId: a.connectionId,
        unknownReason: a.unknownReason,
        startedAtMs: a.startedAtMs,
        finishedAtMs: a.finishedAtMs,
      })),
      reconciliations: reconciliationRepository.listRecords(db, e.id).map((r) => ({
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
    events: runRepository
      .listEvents(db, run.id, 0)
      .map((ev) => ({ seq: ev.seq, type: ev.type, terminal: ev.terminal, payload: parse(ev.payloadJson) })),
  };
}
