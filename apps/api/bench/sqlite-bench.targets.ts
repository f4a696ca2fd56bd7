// The SQLite rows' targets (the `target` and `met` columns of the bench table; also written to the results file).

/**
 * Targets (SQLite part): ledger ≤ 1.5× its floor, and per lifecycle (enqueue, claim, complete, terminal update;
 * delivery excluded) ≤ 8 statements besides BEGIN and COMMIT and ≤ 10 WAL pages; recovery ≤ 1.3× its bound at
 * 10k and 100k, 100k peak RSS < 150 MB, repair p95 ≤ bound + 150 ms.
 */
export const TARGETS = {
  ledgerRatio: 1.5,
  ledgerStatements: 8,
  ledgerWalPages: 10,
  recoveryRatio: 1.3,
  recoveryRssBytes: 150 * 1024 * 1024,
  repairP95OverBoundMs: 150,
};
