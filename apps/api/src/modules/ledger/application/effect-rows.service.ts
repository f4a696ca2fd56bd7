/** The ledger's published reads and compare-and-set writes of effects and attempts: what the modules above it may do to the ledger's own tables. */
import { effectRepository } from "../infrastructure/effect.repository.js";

export type { AttemptRow, EffectRow } from "../infrastructure/effect.repository.js";

/**
 * The part of the ledger's `external_tool_effects` / `external_tool_effect_attempts` repository the
 * other modules use, each in the caller's transaction (the methods are the repository's own: see
 * `ledger/infrastructure/effect.repository.ts` for each one's contract). Inserting an effect or an
 * attempt, or changing an attempt, stays inside the ledger (the intent, claim and report services);
 * a settling write takes its columns from the ledger's lifecycle machine (`settleTransition`).
 */
export const effectRows = {
  findById: effectRepository.findById,
  findByCommand: effectRepository.findByCommand,
  findByClientToolCall: effectRepository.findByClientToolCall,
  findByRunToolCall: effectRepository.findByRunToolCall,
  listByRun: effectRepository.listByRun,
  listAttempts: effectRepository.listAttempts,
  listFenced: effectRepository.listFenced,
  listOfDriverInStatus: effectRepository.listOfDriverInStatus,
  listSessionRepeats: effectRepository.listSessionRepeats,
  mapByNonTerminalCommandOfDriver: effectRepository.mapByNonTerminalCommandOfDriver,
  updateIfCurrent: effectRepository.updateIfCurrent,
  updateIfCurrentAndUnleased: effectRepository.updateIfCurrentAndUnleased,
};
