// The SQLite rows' targets (the `target` and `met` columns of the bench table; also written to the results file).

/** Targets (SQLite part): ledger ≤ 1.5× its floor, recovery ≤ 1.3× its bound at 10k and 100k, 100k peak RSS < 150 MB, repair p95 ≤ bound + 150 ms. */
export const TARGETS = { ledgerRatio: 1.5, recoveryRatio: 1.3, recoveryRssBytes: 150 * 1024 * 1024, repairP95OverBoundMs: 150 };
