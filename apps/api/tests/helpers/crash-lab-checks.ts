/**
 * The checks of the crash lab (the crash-safety invariants, research/reliability.md I1–I4, I7, I8, I10): the
 * ledger (raw SQL on the file) against the provider double's ground truth and the lab's record of
 * sends and commits. Each returns human-readable violations; an empty list is a pass.
 */
import { eq, sql, type SQL } from "drizzle-orm";
import type { Store as PortStore, StoreTx } from "../../src/platform/db/store.port.js";
import type { CrashLab } from "./crash-lab.js";
import { EFFECT_STEPS, TERMINAL_COMMAND } from "./lifecycle-oracle.js";
import { checkTurnAccounts } from "./turn-account-check.js";

/**
 * Installs a persistent (in the test's own file) audit of every effect status change, so the
 * transitions made by every "process" across crashes are checked. Idempotent (each boot calls it).
 */
export function installLabAudit(lab: CrashLab): void {
  lab.sqlite.exec(`
    CREATE TABLE IF NOT EXISTS lab_audit_effect (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT, old_status TEXT, new_status TEXT,
      old_version INTEGER, new_version INTEGER, old_attempts INTEGER, new_attempts INTEGER);
    CREATE TRIGGER IF NOT EXISTS lab_audit_effect_update AFTER UPDATE ON external_tool_effects BEGIN
      INSERT INTO lab_audit_effect (id, old_status, new_status, old_version, new_version, old_attempts, new_attempts)
      VALUES (NEW.id, OLD.status, NEW.status, OLD.version, NEW.version, OLD.attempt_count, NEW.attempt_count);
    END;
    CREATE TRIGGER IF NOT EXISTS lab_audit_effect_delete AFTER DELETE ON external_tool_effects BEGIN
      INSERT INTO lab_audit_effect (id, old_status, new_status) VALUES (OLD.id, OLD.status, 'DELETED');
    END;
  `);
}

/** Raw SQL on a PostgreSQL unit of work's connection (both PostgreSQL drizzle builders have `execute`). */
async function execPg(tx: StoreTx, query: SQL): Promise<Record<string, unknown>[]> {
  const db = tx.db as unknown as { execute(q: SQL): Promise<{ rows: Record<string, unknown>[] }> };
  return (await db.execute(query)).rows;
}

/** The PostgreSQL form of {@link installLabAudit}: the same audit table, filled by a plpgsql row trigger. Idempotent. */
export async function installLabAuditPg(store: PortStore): Promise<void> {
  await store.transaction(async (tx) => {
    await execPg(
      tx,
      sql.raw(`
      CREATE TABLE IF NOT EXISTS lab_audit_effect (seq BIGSERIAL PRIMARY KEY, id TEXT, old_status TEXT, new_status TEXT,
        old_version BIGINT, new_version BIGINT, old_attempts BIGINT, new_attempts BIGINT);
      CREATE OR REPLACE FUNCTION lab_audit_effect_fn() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' THEN
          INSERT INTO lab_audit_effect (id, old_status, new_status) VALUES (OLD.id, OLD.status, 'DELETED');
          RETURN OLD;
        END IF;
        INSERT INTO lab_audit_effect (id, old_status, new_status, old_version, new_version, old_attempts, new_attempts)
          VALUES (NEW.id, OLD.status, NEW.status, OLD.version, NEW.version, OLD.attempt_count, NEW.attempt_count);
        RETURN NEW;
      END $$;
      CREATE OR REPLACE TRIGGER lab_audit_effect_update AFTER UPDATE OR DELETE ON external_tool_effects
        FOR EACH ROW EXECUTE FUNCTION lab_audit_effect_fn();
    `),
    );
  });
}

/** Empties the PostgreSQL lab audit (a new lab on a reused database). */
export async function resetLabAuditPg(store: PortStore): Promise<void> {
  await store.transaction((tx) => execPg(tx, sql.raw("TRUNCATE lab_audit_effect RESTART IDENTITY")));
}

/** The lab audit rows in order, from either store. */
export async function labAudit(lab: CrashLab): Promise<Array<Record<string, unknown>>> {
  if (lab.store.dialect === "sqlite")
    return lab.sqlite.prepare("SELECT * FROM lab_audit_effect ORDER BY seq").all() as Array<Record<string, unknown>>;
  return lab.store.read((tx) => execPg(tx, sql.raw("SELECT * FROM lab_audit_effect ORDER BY seq")));
}

interface EffectRow {
  id: string;
  command_id: string;
  idempotency_key: string;
  status: string;
  resolution: string | null;
  result_json: string | null;
  reconciliation_receipt_json: string | null;
  operator_attention: string | null;
  attempt_count: number;
}

/** Every effect of the lab but its retention canary (seeded, never part of the flow), read through the port (either store), in the snake_case shape the checks use. */
async function labEffects(lab: CrashLab): Promise<EffectRow[]> {
  const rows = (await lab.store.read((tx) => tx.db.select().from(tx.tables.externalToolEffects))).filter(
    (r) => r.id !== lab.canaryEffectId,
  );
  return rows.map((r) => ({
    id: r.id,
    command_id: r.commandId,
    idempotency_key: r.idempotencyKey,
    status: r.status,
    resolution: r.resolution,
    result_json: r.resultJson,
    reconciliation_receipt_json: r.reconciliationReceiptJson,
    operator_attention: r.operatorAttention,
    attempt_count: Number(r.attemptCount),
  }));
}

/** The final ledger state of the lab's one effect (undefined when no intent was written). */
export async function labEffect(lab: CrashLab): Promise<EffectRow | undefined> {
  return (await labEffects(lab))[0];
}

/**
 * Every invariant after quiescence:
 * - I1 at most one provider send and one provider commit per key; at most one attempt;
 * - I3 `succeeded` ⇒ the provider holds a commit for the key and the ledger result is that commit's;
 *   `not_executed` ⇒ the provider holds none (and, when the lookup fences, a late write is refused);
 * - I2 a committed key whose provider can be asked (profile with lookup) ends `succeeded`;
 *   without lookup it ends `succeeded` (result persisted before the crash) or fenced `unknown`;
 * - I4 only legal transitions (persistent audit), versions grow on each status change;
 * - I10 nothing `executing`; every command has a terminal receipt;
 * - rule 6 a `completed` command holds exactly its effect's stored result;
 * - rules 14 and 16 every failed run's error carries the turn's account, true to the ledger.
 */
export async function checkLab(lab: CrashLab): Promise<string[]> {
  const v: string[] = [];
  const effects = await labEffects(lab);
  for (const a of await labAudit(lab)) {
    const from = String(a.old_status);
    const to = String(a.new_status);
    if (to === "DELETED") v.push(`effect ${a.id} deleted while ${from}`);
    else if (from !== to && !EFFECT_STEPS[from]?.includes(to)) v.push(`illegal transition ${from} → ${to} (I4)`);
    else if (from !== to && Number(a.new_version) <= Number(a.old_version)) v.push(`${from} → ${to} without a version bump (rule 7)`);
    if (Number(a.new_attempts) > 1) v.push(`attempt ${a.new_attempts} (I1)`);
  }
  for (const e of effects) {
    const key = e.idempotency_key;
    const sends = lab.facts.sends.get(key) ?? 0;
    const commits = lab.facts.commits.get(key) ?? 0;
    const record = lab.double.record(key);
    if (sends > 1) v.push(`${sends} provider sends for one key (I1)`);
    if (commits > 1) v.push(`${commits} provider commits for one key (I1 duplicated)`);
    if (e.attempt_count > 1) v.push(`attempt_count ${e.attempt_count} (I1)`);
    if (e.status === "executing") v.push("effect still executing after quiescence (I10)");
    if (e.status === "succeeded") {
      if (!record) v.push(`succeeded (${e.resolution}) but the provider holds no commit (I3 phantom)`);
      const out = (JSON.parse(e.result_json ?? "null") as { outputText?: string } | null)?.outputText;
      if (record && out !== `created ${record.operationId}`) v.push(`succeeded with ${out}, provider holds ${record.operationId} (I3)`);
      if (e.resolution === "reconciled" && !e.reconciliation_receipt_json) v.push("reconciled without a receipt (I8)");
    }
    if (e.status === "not_executed") {
      if (record) v.push(`not_executed but the provider committed ${record.operationId} (lost)`);
      if (!e.reconciliation_receipt_json && e.resolution === "reconciled") v.push("not_executed/reconciled without a receipt (I8)");
      if (lab.profile === "dedupe_lookup") {
        const late = await lab.double.commit(key, { title: "Disk full" });
        if (late.status !== "refused") v.push(`a late write of a not_executed key was ${late.status} (I3)`);
      }
    }
    if (record && e.status !== "succeeded") {
      if (lab.profile !== "neither") v.push(`the provider committed but the ledger ends ${e.status} (I2 lost)`);
      else if (e.status !== "unknown") v.push(`the provider committed but the ledger ends ${e.status} without lookup (lost)`);
    }
    if (!record && e.status === "unknown" && lab.profile !== "neither" && !e.operator_attention) {
      v.push("unknown after quiescence with a provider that can be asked and no operator attention (I10)");
    }
    const cmd = await lab.store.read(async (tx) => {
      const t = tx.tables.driverCommands;
      const row = (await tx.db.select({ status: t.status, resultJson: t.resultJson }).from(t).where(eq(t.id, e.command_id)))[0]!;
      return { status: row.status, result_json: row.resultJson };
    });
    if (!TERMINAL_COMMAND.has(cmd.status)) v.push(`command ${cmd.status} without a terminal receipt after quiescence (I10)`);
    if (cmd.status === "completed" && (e.status !== "succeeded" || cmd.result_json !== e.result_json)) {
      v.push(`command completed while its effect is ${e.status} / another result (rule 6: no terminal state before the result commits)`);
    }
  }
  v.push(...(await labTurnAccountViolations(lab)));
  return v;
}

/** Rules 14 and 16 on the lab's store (either dialect): the failed runs' accounts against the ledger. */
async function labTurnAccountViolations(lab: CrashLab): Promise<string[]> {
  return lab.store.read(async (tx) => {
    const { sessionRuns: r, externalToolEffects: e, driverCommands: c } = tx.tables;
    const runs = await tx.db.select({ id: r.id, updatedAtMs: r.updatedAtMs, errorJson: r.errorJson }).from(r).where(eq(r.status, "failed"));
    const effects = await tx.db
      .select({
        id: e.id,
        runId: e.runId,
        status: e.status,
        toolCallId: e.toolCallId,
        createdAtMs: e.createdAtMs,
        compensatesEffectId: e.compensatesEffectId,
        commandStatus: c.status,
        commandErrorJson: c.errorJson,
      })
      .from(e)
      .innerJoin(c, eq(c.id, e.commandId));
    // every row ends its Driver (reconnect then finalize, or the sweep): the lab's run must have ended with an account
    const ended = lab.runId === null || runs.some((x) => x.id === lab.runId);
    return [
      ...(ended ? [] : [`run ${lab.runId} did not end with a run error after recovery (rule 16 unchecked)`]),
      ...checkTurnAccounts(
        runs.map((x) => ({ ...x, updatedAtMs: Number(x.updatedAtMs) })),
        effects.map((x) => ({ ...x, createdAtMs: Number(x.createdAtMs) })),
      ),
    ];
  });
}
