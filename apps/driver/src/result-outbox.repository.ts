/** The Driver's outbox of provider results: each result durable on disk from before it is sent until the API has answered it. */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { EffectLateResultRequestSchema, UlidSchema } from "@mosoo/contracts";
import { z } from "zod";
import { DRIVER_STATE_FILE_MODE } from "./driver-state.repository.js";
import { removeFileDurably, writeFileDurably } from "./durable-file.js";

/**
 * One provider result the Driver holds and has not yet had answered by the API: everything both
 * reports need (`effectComplete`, and `effectLateResult` when the effect was fenced meanwhile,
 * see `decideLateEvidence` in effect-lifecycle.machine.ts), i.e. the late-result request (the attempt's own `connectionId`, which
 * the API accepts even after a newer connection superseded it) plus the effect and command it belongs
 * to and `recordedAtMs` (wall clock, ms since the Unix epoch, when it was written; for the log).
 */
const PendingResultSchema = EffectLateResultRequestSchema.extend({
  effectId: UlidSchema,
  commandId: UlidSchema,
  recordedAtMs: z.number().int().nonnegative(),
});
/** See {@link PendingResultSchema}. */
export type PendingResult = z.infer<typeof PendingResultSchema>;

/** An outbox file that could not be read back (named for the log; it is left where it is for an operator). */
export interface UnreadableOutboxFile {
  file: string;
  reason: string;
}

/**
 * The outbox directory next to the state file (`<state file>.outbox/`, mode 0700): one JSON file per
 * held result, `<effectId>-<attempt>.json`, mode 0600 (a result may carry the provider's data).
 * Each write and each removal is atomic and fsynced with its directory (`writeFileDurably`), so a
 * result written before it was sent survives a SIGKILL or a power loss of the Driver. Removing a
 * result that is already gone is fine (the API's reports are idempotent; a repeat is harmless).
 */
export class ResultOutboxRepository {
  /** @param dirPath the outbox directory; created on the first {@link put}. */
  constructor(readonly dirPath: string) {}

  /** The outbox of the Driver whose state file is `stateFile`: `<stateFile>.outbox`. */
  static besideStateFile(stateFile: string): ResultOutboxRepository {
    return new ResultOutboxRepository(`${stateFile}.outbox`);
  }

  /**
   * Writes `pending` durably (replacing an earlier file of the same effect and attempt).
   * @throws Error (fs errors such as `ENOSPC`) when it cannot be written; ZodError when `pending` is off its schema.
   */
  async put(pending: PendingResult): Promise<void> {
    const valid = PendingResultSchema.parse(pending);
    await writeFileDurably(this.fileOf(valid), JSON.stringify(valid), DRIVER_STATE_FILE_MODE);
  }

  /** Removes the file of `pending` durably (a missing one is fine). @throws Error (fs errors). */
  async remove(pending: Pick<PendingResult, "effectId" | "attempt">): Promise<void> {
    await removeFileDurably(this.fileOf(pending));
  }

  /**
   * Every held result, oldest first (by `recordedAtMs`), and the files that are not one (not JSON, off
   * the schema: left in place, named so the caller can log them). A missing directory holds nothing.
   * @throws Error (fs errors other than a missing directory).
   */
  async list(): Promise<{ pending: PendingResult[]; unreadable: UnreadableOutboxFile[] }> {
    let names: string[];
    try {
      names = await readdir(this.dirPath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { pending: [], unreadable: [] };
      throw error;
    }
    const pending: PendingResult[] = [];
    const unreadable: UnreadableOutboxFile[] = [];
    for (const name of names.filter((n) => n.endsWith(".json") && !n.startsWith(".")).sort()) {
      const file = join(this.dirPath, name);
      let json: unknown;
      try {
        json = JSON.parse(await readFile(file, "utf8"));
      } catch (error) {
        unreadable.push({ file, reason: error instanceof SyntaxError ? "not JSON" : ((error as NodeJS.ErrnoException).code ?? "EIO") });
        continue;
      }
      const parsed = PendingResultSchema.safeParse(json);
      if (parsed.success) pending.push(parsed.data);
      else unreadable.push({ file, reason: "not a held provider result" });
    }
    return { pending: pending.sort((a, b) => a.recordedAtMs - b.recordedAtMs), unreadable };
  }

  private fileOf(pending: Pick<PendingResult, "effectId" | "attempt">): string {
    return join(this.dirPath, `${pending.effectId}-${pending.attempt}.json`);
  }
}
