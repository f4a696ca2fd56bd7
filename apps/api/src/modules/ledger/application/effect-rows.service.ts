/** The ledger's published reads and compare-and-set writes of effects and attempts: what the modules above it may do to the ledger's own tables. */
import { effectRepository } from "../infrastructure/effect.repository.js";

export type { AttemptRow, EffectRow, OpenCommandWithEffect } from "../infrastructure/effect.repository.js";

/**
 * The part of the ledger's `external_tool_effects` / `external_tool_effect_attempts` repository the
 * other modules use, each in the caller's transaction: the repository itself, typed down to these
 * methods (see `ledger/infrastructure/effect.repository.ts` for each one's contract). Inserting an
 * effect or an attempt, or changing an attempt, stays inside the ledger (the intent, claim and report
 * services); a settling write takes its columns from the ledger's lifecycle machine (`settleTransition`).
 */
export const effectRows: Pick<
  typeof effectRepository,
  | "findById"
  | "findByCommand"
  | "findByClientToolCall"
  | "findByRunToolCall"
  | "listByRun"
  | "listAttempts"
  | "listAttemptsByRun"
  | "listFenced"
  | "listOfDriverInStatus"
  | "listSessionRepeats"
  | "listOpenCommandsOfDriver"
  | "mapByNonTerminalCommandOfDriver"
  | "updateIfCurrent"
  | "updateIfCurrentAndUnleased"
> = effectRepository;
