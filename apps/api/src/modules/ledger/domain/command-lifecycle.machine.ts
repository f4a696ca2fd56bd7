// The command status machine: which transitions apply, repeat or are refused, and which statuses are terminal.
import type { CommandStatus, TransitionOutcome } from "@mosoo/contracts";
import { TERMINAL_COMMAND_STATUSES } from "@mosoo/contracts";

/** The decision for one requested command transition: the typed outcome and, when rejected, why. */
export interface TransitionDecision {
  outcome: TransitionOutcome;
  reason?: string;
}

const ALLOWED: Record<CommandStatus, readonly CommandStatus[]> = {
  queued: ["delivered", "accepted", "failed", "cancelled", "expired"],
  delivered: ["accepted", "completed", "failed", "cancelled", "expired"],
  accepted: ["completed", "failed", "cancelled", "expired"],
  completed: [],
  failed: [],
  expired: [],
  cancelled: [],
};

/** True for `completed`, `failed`, `expired` and `cancelled`: a terminal command never changes again. */
export function isTerminalCommandStatus(status: CommandStatus): boolean {
  return TERMINAL_COMMAND_STATUSES.includes(status);
}

/**
 * Decides a command transition `from → to` (pure). The same status again is a `duplicate`
 * (nothing changes, the caller may answer as if applied); a move out of a terminal status, or one
 * not in the table, is `rejected` with a reason. Redelivery to a new connection is not a status
 * change and does not go through here.
 */
export function decideCommandTransition(from: CommandStatus, to: CommandStatus): TransitionDecision {
  if (from === to) return { outcome: "duplicate" };
  if (ALLOWED[from].includes(to)) return { outcome: "applied" };
  return {
    outcome: "rejected",
    reason: isTerminalCommandStatus(from) ? `command is already ${from}` : `cannot move a command from ${from} to ${to}`,
  };
}
