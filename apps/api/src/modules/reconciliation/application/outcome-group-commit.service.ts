// Group commit of reconciliation outcomes: several whole outcomes per transaction, each delivered only after the commit.
import { StoreCommitUnknownError } from "../../../platform/db/store-errors.js";
import type { Store, StoreTx } from "../../../platform/db/store.port.js";

/**
 * Group commit of reconciliation outcomes (docs/DESIGN.md §3 rule 6: several outcomes MAY
 * share one transaction, each whole inside it, nothing of any of them delivered before that commit):
 * - `maxBatch`: outcomes per transaction at most (1 = every outcome commits alone, the behaviour
 *   before group commit); a queue that reaches it is committed at once;
 * - `windowMs`: how long (ms) the first queued outcome waits for others before the queue is
 *   committed; 0 = at the end of the current event-loop turn (`setImmediate`): every outcome that
 *   became ready meanwhile, e.g. while the previous batch's commit held the store, shares it.
 * Config: `MOSOO_GROUP_COMMIT_MAX`, `MOSOO_GROUP_COMMIT_WINDOW_MS` (docs/configuration.md).
 */
export interface GroupCommitSettings {
  maxBatch: number;
  windowMs: number;
}

/** Defaults: up to 64 outcomes per transaction (the highest `MOSOO_RECONCILIATION_CONCURRENCY`), a 2 ms window. */
export const DEFAULT_GROUP_COMMIT: GroupCommitSettings = { maxBatch: 64, windowMs: 2 };

/**
 * One outcome's writes: an async function run inside a transaction (it awaits only the store) that
 * must leave the store as it found it or write the WHOLE outcome (a compare-and-set loser writes
 * nothing and returns its verdict). It may run twice: once in a batch that then fails (rolled back,
 * nothing of it kept) and once alone; its return value is only delivered from the run that committed.
 */
export type OutcomeWrite<T> = (tx: StoreTx) => Promise<T>;

interface Pending {
  write: OutcomeWrite<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * Queues outcome writes and commits them together, in batches as {@link GroupCommitSettings} says.
 * Each write runs inside the batch's transaction, whole; the promise {@link submit} returns settles
 * only after that transaction committed (durably: `synchronous = FULL`), so a caller delivers
 * nothing of its outcome before the commit. If the batch's transaction fails (a write throws, the
 * store is busy, the commit fails), the batch rolls back as a whole and each write is retried ALONE
 * in its own transaction: its own result or error goes to its own caller, and no outcome is lost to
 * another's failure. One exception: `StoreCommitUnknownError` (`store.commit_unknown`, the
 * connection died during COMMIT) says the batch may have committed, so nothing is retried: every
 * write of the batch rejects with that error (each caller reads the store again, store-errors.ts). A batch is one `Store.transaction`: it never interleaves with another
 * transaction (the store's unit of work), and the writes of one batch run one after another.
 */
export class OutcomeGroupCommit {
  private queue: Pending[] = [];
  private scheduled: { cancel: () => void } | null = null;

  /**
   * @param store the store the outcomes are written to
   * @param settings batch size and window ({@link GroupCommitSettings})
   * @throws RangeError when `maxBatch` < 1 or `windowMs` < 0 (or either is not an integer)
   */
  constructor(
    private readonly store: Store,
    private readonly settings: GroupCommitSettings = DEFAULT_GROUP_COMMIT,
  ) {
    if (!Number.isInteger(settings.maxBatch) || settings.maxBatch < 1)
      throw new RangeError(`group commit maxBatch must be an integer ≥ 1 (got ${settings.maxBatch})`);
    if (!Number.isInteger(settings.windowMs) || settings.windowMs < 0)
      throw new RangeError(`group commit windowMs must be an integer ≥ 0 (got ${settings.windowMs})`);
  }

  /** Outcome writes queued and not yet committed (for tests and shutdown). */
  get pending(): number {
    return this.queue.length;
  }

  /**
   * Queues `write` and resolves with its return value once the transaction that ran it committed;
   * rejects with the error of its own run alone, or with the batch's `StoreCommitUnknownError`
   * (`store.commit_unknown`: whether it committed is unknown; see the class). With `maxBatch` 1 the write commits
   * alone at once (its own transaction, started inside this call), exactly as before group commit.
   */
  submit<T>(write: OutcomeWrite<T>): Promise<T> {
    if (this.settings.maxBatch === 1) return this.store.transaction(write);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (this.queue.length >= this.settings.maxBatch) void this.flush();
      else this.schedule();
    });
  }

  /**
   * Commits everything queued now (the batches of at most `maxBatch`), without waiting for the
   * window; resolves once every batch taken here has committed or failed (each write's own promise
   * says which). Never rejects.
   */
  async flush(): Promise<void> {
    this.scheduled?.cancel();
    this.scheduled = null;
    const batches: Array<Promise<void>> = [];
    while (this.queue.length > 0) batches.push(this.commitBatch(this.queue.splice(0, this.settings.maxBatch)));
    await Promise.all(batches);
  }

  private schedule(): void {
    if (this.scheduled) return;
    if (this.settings.windowMs === 0) {
      const handle = setImmediate(() => void this.flush());
      this.scheduled = { cancel: () => clearImmediate(handle) };
    } else {
      const handle = setTimeout(() => void this.flush(), this.settings.windowMs);
      this.scheduled = { cancel: () => clearTimeout(handle) };
    }
  }

  private async commitBatch(batch: Pending[]): Promise<void> {
    if (batch.length === 1) {
      await this.commitAlone(batch[0]!);
      return;
    }
    let results: unknown[];
    try {
      results = await this.store.transaction(async (tx) => {
        const out: unknown[] = [];
        for (const p of batch) out.push(await p.write(tx));
        return out;
      });
    } catch (err) {
      if (err instanceof StoreCommitUnknownError) {
        // The connection died during COMMIT: the batch may have committed whole. A retry alone would
        // lose its CAS to its own first run and hide that; every caller gets the unknown instead and
        // replays its operation as a whole (store-errors.ts).
        for (const p of batch) p.reject(err);
        return;
      }
      // The whole batch rolled back: nothing of any outcome in it was written. Each is retried
      // alone, so one outcome's failure (or a busy store) never costs another its commit.
      for (const p of batch) await this.commitAlone(p);
      return;
    }
    batch.forEach((p, i) => p.resolve(results[i]));
  }

  private async commitAlone(p: Pending): Promise<void> {
    let result: unknown;
    try {
      result = await this.store.transaction(p.write);
    } catch (err) {
      p.reject(err);
      return;
    }
    p.resolve(result);
  }
}
