// The repeat guard (docs/DESIGN.md §3 rule 17): refuses a tool call that repeats a recent write of the same session.
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import { effectRows } from "../../ledger/application/effect-rows.service.js";
import { runRepository } from "../infrastructure/run.repository.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

/** Per MCP server id, the repeat guard's window in ms; a server not in the map is not guarded (the default). */
export type RepeatGuardWindows = ReadonlyMap<string, number>;

/** What an earlier effect is, as the refusal names it: settled or fenced, or still on its way (`in_flight`). */
type EarlierStatus = "succeeded" | "unknown" | "compensated" | "in_flight";

/** How many candidates one guard check reads at most (newest first); one is enough to refuse. */
const CANDIDATES = 20;

/** A tool call about to be queued: its session, server, tool, request fingerprint, the named earlier effect, and now (ms). */
export interface RepeatCheck {
  sessionId: string;
  serverId: string;
  toolName: string;
  requestFingerprint: string;
  repeatOfEffectId: string | undefined;
  nowMs: number;
}

/**
 * Inside the enqueue's transaction, before the intent is written:
 * - `repeatOfEffectId` given: it must name an effect of the same session with the same server, tool and
 *   request fingerprint (else 409 `tool_call.repeat_invalid`, nothing written); the call goes through and
 *   the caller records the id on the new effect (a deliberate repeat). On a guarded server it must name
 *   the NEWEST counting effect (below): one named effect lets exactly one repeat through, so a resent
 *   deliberate repeat, or ten sent at once, is refused naming the repeat that already went through;
 * - when `windowMs` is set (the server is guarded): the session's row is locked (so two identical
 *   enqueues never both pass: one effect), and the newest effect of the session with the same server,
 *   tool and fingerprint created less than `windowMs` ago that is `succeeded`, `unknown` (or `executing`),
 *   compensated, or still queued (`intent` with a live command) refuses the call unless it is the named one:
 *   409 `tool_call.repeat_refused` with `details` {effectId, status, toolCallId, windowMs}.
 * A `not_executed` earlier effect, or one never sent whose command ended, does not count: it may be sent again.
 * @returns the id to record as `repeat_of_effect_id`, or undefined.
 * @throws UserFacingError `tool_call.repeat_refused`, `tool_call.repeat_invalid`.
 */
export async function guardRepeat(tx: StoreTx, check: RepeatCheck, windowMs: number | undefined): Promise<string | undefined> {
  const named = check.repeatOfEffectId === undefined ? undefined : await namedRepeat(tx, check, check.repeatOfEffectId);
  if (windowMs === undefined) return named;
  await runRepository.lockSession(tx, check.sessionId);
  const newest = await newestCountingRepeat(tx, check, windowMs);
  if (newest === null || newest.effect.id === named) return named;
  const { effect, status } = newest;
  throw new UserFacingError(
    "tool_call.repeat_refused",
    `this tool call repeats ${effect.toolName} on ${effect.serverId} with the same arguments as tool call ${effect.toolCallId} (effect ${effect.id}, ${status}) of this session; nothing was queued. To repeat it deliberately, send repeatOfEffectId: "${effect.id}"`,
    { effectId: effect.id, status, toolCallId: effect.toolCallId, windowMs },
  );
}

/**
 * The effect `repeatOfEffectId` names, checked: same session, server, tool and request fingerprint.
 * @returns its id. @throws UserFacingError `tool_call.repeat_invalid` (nothing written).
 */
async function namedRepeat(tx: StoreTx, check: RepeatCheck, repeatOfEffectId: string): Promise<string> {
  const named = await effectRows.findById(tx, repeatOfEffectId);
  if (
    !named ||
    named.sessionId !== check.sessionId ||
    named.serverId !== check.serverId ||
    named.toolName !== check.toolName ||
    named.requestFingerprint !== check.requestFingerprint
  ) {
    throw new UserFacingError(
      "tool_call.repeat_invalid",
      `repeatOfEffectId ${repeatOfEffectId} names no effect of this session with the same server, tool and arguments; nothing was queued`,
      { repeatOfEffectId },
    );
  }
  return named.id;
}

/** The newest effect inside the window that counts as a repeat (see {@link guardRepeat}) and its status, or null. */
async function newestCountingRepeat(
  tx: StoreTx,
  check: RepeatCheck,
  windowMs: number,
): Promise<{ effect: { id: string; toolName: string; serverId: string; toolCallId: string }; status: EarlierStatus } | null> {
  const candidates = await effectRows.listSessionRepeats(tx, {
    sessionId: check.sessionId,
    fingerprint: check.requestFingerprint,
    serverId: check.serverId,
    toolName: check.toolName,
    sinceMs: check.nowMs - windowMs + 1,
    limit: CANDIDATES,
  });
  for (const { effect, commandStatus, compensated } of candidates) {
    const status: EarlierStatus | null =
      effect.status === "succeeded"
        ? compensated
          ? "compensated"
          : "succeeded"
        : effect.status === "unknown"
          ? "unknown"
          : effect.status === "executing"
            ? "in_flight"
            : effect.status === "intent" && !["completed", "failed", "expired", "cancelled"].includes(commandStatus)
              ? "in_flight"
              : null;
    if (status !== null) return { effect, status };
  }
  return null;
}
