// The operator's effect list and filters over the effect rows: keyset-paginated, newest first.
import { and, count, desc, eq, gte, lt, lte, max, sql, type SQL } from "drizzle-orm";
import { ulidFloor } from "@mosoo/contracts";
import type { EffectStatus } from "@mosoo/contracts";
import type { OperatorAttentionReason } from "@mosoo/contracts";
import type { StoreTx } from "../../../platform/db/store.port.js";
import type { EffectRow } from "../../ledger/application/effect-rows.service.js";

/**
 * A filter of the operator's effect list: one `status` (or any, when undefined); an
 * `operator_attention` reason (`attention`); optional exact `serverId`, `toolName`,
 * `runId`, `toolCallId`; `createdAtMostMs` (ms since the epoch: only effects created at or before it);
 * `beforeId` (keyset cursor: only ids below it); `limit` rows.
 */
export interface EffectListFilter {
  status: EffectStatus | undefined;
  attention?: OperatorAttentionReason | undefined;
  serverId?: string | undefined;
  toolName?: string | undefined;
  runId?: string | undefined;
  toolCallId?: string | undefined;
  createdAtMostMs?: number | undefined;
  beforeId?: string | undefined;
  limit: number;
}

/** The operator's read queries over `external_tool_effects` (keyset-paginated, newest first; dialect-neutral). */
export const operatorQueryRepository = {
  /**
   * Effects matching `filter`, newest first (ids are monotonic ULIDs, so id order is creation
   * order), at most `filter.limit`. Uses `external_tool_effects_status_id_idx` (status, id): a range scan in id order (migration 0006).
   */
  async listEffects(tx: StoreTx, filter: EffectListFilter): Promise<EffectRow[]> {
    const t = tx.tables.externalToolEffects;
    const conds: SQL[] = [];
    if (filter.status !== undefined) conds.push(eq(t.status, filter.status));
    if (filter.attention !== undefined) conds.push(eq(t.operatorAttention, filter.attention));
    if (filter.serverId !== undefined) conds.push(eq(t.serverId, filter.serverId));
    if (filter.toolName !== undefined) conds.push(eq(t.toolName, filter.toolName));
    if (filter.runId !== undefined) conds.push(eq(t.runId, filter.runId));
    if (filter.toolCallId !== undefined) conds.push(eq(t.toolCallId, filter.toolCallId));
    if (filter.createdAtMostMs !== undefined) conds.push(lte(t.createdAtMs, filter.createdAtMostMs));
    if (filter.beforeId !== undefined) conds.push(lt(t.id, filter.beforeId));
    return tx.db
      .select()
      .from(t)
      .where(and(...conds))
      .orderBy(desc(t.id))
      .limit(filter.limit);
  },
  /** The compensations of `effectId` (effects whose `compensates_effect_id` is it), oldest first. */
  async listCompensations(tx: StoreTx, effectId: string): Promise<EffectRow[]> {
    const t = tx.tables.externalToolEffects;
    return tx.db.select().from(t).where(eq(t.compensatesEffectId, effectId)).orderBy(t.id);
  },
  /** How many `unknown` effects there are, by operator attention reason (null: none yet), most first. Range over the (status, id) index. */
  async countUnknownByAttention(tx: StoreTx): Promise<Array<{ reason: OperatorAttentionReason | null; count: number }>> {
    const t = tx.tables.externalToolEffects;
    return tx.db
      .select({ reason: t.operatorAttention, count: count() })
      .from(t)
      .where(eq(t.status, "unknown"))
      .groupBy(t.operatorAttention)
      .orderBy(desc(count()));
  },
  /**
   * How many lookups recorded at or after `sinceMs` (ms since the epoch) ended with each (outcome, reason
   * code), most first: a range over the primary key (ULID ids are time-ordered), so the cost follows the
   * window's lookups, not the table's history.
   */
  async countLookupOutcomes(tx: StoreTx, sinceMs: number): Promise<Array<{ outcome: string; reasonCode: string | null; count: number }>> {
    const t = tx.tables.effectReconciliations;
    return tx.db
      .select({ outcome: t.outcome, reasonCode: t.reasonCode, count: count() })
      .from(t)
      .where(gte(t.id, ulidFloor(sinceMs)))
      .groupBy(t.outcome, t.reasonCode)
      .orderBy(desc(count()), t.outcome);
  },
  /**
   * A marker that changes whenever an effect changes: the largest id (monotonic ULIDs) of the run
   * events (every effect transition appends one: intent, fence, settlement), the lookups and the
   * operator actions. Three primary-key maxima: cheap enough to poll.
   */
  async changeMarker(tx: StoreTx): Promise<string> {
    const { runEvents, effectReconciliations, effectOperatorActions } = tx.tables;
    const rows = await tx.db
      .select({
        ev: sql<string | null>`(SELECT ${max(runEvents.id)} FROM ${runEvents})`,
        rec: sql<string | null>`(SELECT ${max(effectReconciliations.id)} FROM ${effectReconciliations})`,
        act: sql<string | null>`(SELECT ${max(effectOperatorActions.id)} FROM ${effectOperatorActions})`,
      })
      .from(sql`(SELECT 1) AS one`);
    const row = rows[0];
    return `${row?.ev ?? "-"}/${row?.rec ?? "-"}/${row?.act ?? "-"}`;
  },
};
