/**
 * The soak's two verdicts beyond the per-effect classes: committed results the ledger fenced `unknown`
 * though no Driver kill explains it, and healthy Drivers finalized. Pure functions of what the soak
 * recorded (its kills, each Driver process's life) and what the ledger holds.
 */
import type { ProviderTruth } from "./soak-counts.js";

/** One SIGKILL the soak sent to a process of a Driver instance (ms since the epoch). */
export interface DriverKill {
  instanceId: string;
  atMs: number;
}

/**
 * One Driver process's life as the soak saw it: from its `driver.connected` line (`connectedAtMs`) until
 * the soak killed or stopped it, or it exited by itself (`endedAtMs`; null while it runs).
 */
export interface DriverLife {
  instanceId: string;
  connectedAtMs: number;
  endedAtMs: number | null;
}

/** An attempt of an effect as the ledger holds it (`external_tool_effect_attempts` with the effect's Driver instance and key). */
export interface LedgerAttempt {
  effectId: string;
  idempotencyKey: string;
  driverInstanceId: string;
  /** The effect's status and resolution now (`external_tool_effects`). */
  effectStatus: string;
  effectResolution: string | null;
  /** The attempt's own status (`executing`, `succeeded`, `unknown`, `not_sent`) and times (ms since the epoch). */
  status: string;
  startedAtMs: number;
  finishedAtMs: number | null;
}

/**
 * How long before an attempt's recorded start a kill still counts as hitting it (ms): the claim is
 * stamped by the API when it commits, a moment after the Driver asked for it.
 */
const KILL_SLACK_MS = 1_000;

/**
 * The effects whose provider committed the write but whose ledger fenced them `unknown` with no Driver
 * kill to explain it: the Driver had the provider's answer and it was dropped (its result outbox exists
 * to prevent exactly this). An effect counts when
 * - the provider committed its key (`truth(key).commits > 0`), and
 * - the ledger fenced it: it is still `unknown`, or it was settled by a lookup (`resolution` `reconciled`,
 *   which only an `unknown` effect reaches), and
 * - no attempt of it that ended `unknown` (or is still open) was hit by a kill: no SIGKILL of a process of
 *   the effect's Driver instance from {@link KILL_SLACK_MS} before the attempt's start until its end
 *   (`finishedAtMs`, or now). A Driver killed before it stored the provider's answer leaves a
 *   committed write `unknown` by design; that is the fence, not a dropped result.
 * Returns the effect ids, sorted. Pure.
 */
export function unknownCommitted(
  attempts: readonly LedgerAttempt[],
  truth: (key: string) => ProviderTruth,
  kills: readonly DriverKill[],
): string[] {
  const byEffect = new Map<string, LedgerAttempt[]>();
  for (const a of attempts) byEffect.set(a.effectId, [...(byEffect.get(a.effectId) ?? []), a]);
  const found: string[] = [];
  for (const [effectId, list] of byEffect) {
    const first = list[0]!;
    const fenced = first.effectStatus === "unknown" || first.effectResolution === "reconciled";
    if (!fenced || truth(first.idempotencyKey).commits === 0) continue;
    const explained = list.some(
      (a) =>
        a.status !== "succeeded" &&
        kills.some(
          (k) => k.instanceId === a.driverInstanceId && k.atMs >= a.startedAtMs - KILL_SLACK_MS && k.atMs <= (a.finishedAtMs ?? Infinity),
        ),
    );
    if (!explained) found.push(effectId);
  }
  return found.sort();
}

/**
 * The healthy Drivers that were finalized: a Driver instance finalized at F (`finalized_at_ms`) is
 * healthy when one of its processes had connected at or before F − `heartbeatTtlMs` and was neither
 * killed nor stopped by the soak, nor exited, before F. That process held its connection and sent
 * heartbeats through the whole TTL before the finalization, so only heartbeats the API failed to store
 * or to judge fairly (a database fault) can have finalized it. A Driver the soak killed and restarted
 * late (after the TTL) is finalized by design and does not count. Returns the instance ids, sorted. Pure.
 */
export function healthyFinalized(
  finalized: ReadonlyArray<{ id: string; finalizedAtMs: number }>,
  lives: readonly DriverLife[],
  heartbeatTtlMs: number,
): string[] {
  return finalized
    .filter((f) =>
      lives.some(
        (l) =>
          l.instanceId === f.id &&
          l.connectedAtMs <= f.finalizedAtMs - heartbeatTtlMs &&
          (l.endedAtMs === null || l.endedAtMs >= f.finalizedAtMs),
      ),
    )
    .map((f) => f.id)
    .sort();
}

/** The parts of a soak report the verdict reads (soak-runner.ts `SoakReport`). */
interface VerdictInput {
  counts: { lost: number; duplicated: number; phantom: number; stuck: number };
  unknownCommitted: readonly string[];
  healthyFinalized: readonly string[];
}

/** True when the run must fail: any lost, duplicated, phantom or stuck effect, unknown-but-committed effect, or healthy Driver finalized. */
export function soakVerdictFailed(r: VerdictInput): boolean {
  const c = r.counts;
  return c.lost + c.duplicated + c.phantom + c.stuck + r.unknownCommitted.length + r.healthyFinalized.length > 0;
}

/** The verdict's six figures, as the summary line prints them. */
export function soakTally(r: VerdictInput): string {
  const c = r.counts;
  return `lost ${c.lost}, duplicated ${c.duplicated}, phantom ${c.phantom}, stuck ${c.stuck}, unknown-but-committed ${r.unknownCommitted.length}, healthy Drivers finalized ${r.healthyFinalized.length}`;
}
