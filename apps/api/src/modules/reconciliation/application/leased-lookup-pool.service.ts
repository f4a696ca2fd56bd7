// The reconciler's worker pool: leased batches in, `concurrency` lookups in flight (p-queue), unused leases given back.
import PQueue from "p-queue";

/**
 * Options of {@link runLeasedPool}:
 * - `nextBatch(max)`: the next batch, or null when the work ran out; `max` is `concurrency`, which a
 *   batch may exceed by a fixed factor (the sweep answers pages of two batches); called only once the
 *   previous batch has been handed out, so memory holds one batch plus the lookups in flight, however
 *   large the backlog;
 * - `concurrency`: items run at once (at least 1);
 * - `shouldStart()`: false stops starting items (the ones in flight finish);
 * - `run(item)`: one item's work; a rejection stops the pool (no new item starts) and is rethrown by
 *   {@link runLeasedPool} once the items in flight have settled;
 * - `release(unused)`: gets the items of the last batch that were never started (their leases go back).
 */
export interface LeasedPoolOptions<T> {
  nextBatch: (max: number) => Promise<T[] | null>;
  concurrency: number;
  shouldStart: () => boolean;
  run: (item: T) => Promise<void>;
  release: (unused: T[]) => Promise<void>;
}

/**
 * Runs the items of the batches `opts.nextBatch` answers, `opts.concurrency` at a time, with
 * backpressure (the next item is pulled only once the queue has started the previous one). Resolves
 * when the work ran out (or `shouldStart` said stop) and every started item settled; rejects with the
 * first rejection of `run`. `release` always gets the unstarted rest of the last batch.
 */
export async function runLeasedPool<T>(opts: LeasedPoolOptions<T>): Promise<void> {
  const concurrency = Math.max(1, opts.concurrency);
  const buffer: T[] = [];
  async function* items(): AsyncGenerator<T> {
    while (opts.shouldStart()) {
      if (buffer.length === 0) {
        const batch = await opts.nextBatch(concurrency);
        if (batch === null) return;
        buffer.push(...batch);
        if (buffer.length === 0) continue;
      }
      yield buffer.shift()!;
    }
  }
  const queue = new PQueue({ concurrency });
  let failure: { error: unknown } | undefined;
  try {
    for await (const item of items()) {
      queue
        .add(() => opts.run(item))
        .catch((error: unknown) => {
          failure ??= { error };
        });
      await queue.onSizeLessThan(1);
      if (failure) break;
    }
    await queue.onIdle();
  } finally {
    await opts.release(buffer.splice(0));
  }
  if (failure) throw failure.error;
}
