/**
 * The fixture provider's SQLite schema (version 2; version 1 lacked `issue_closures`). Every statement is idempotent, so opening an
 * existing file runs it again harmlessly.
 * - `issues`: one row per committed write (the issue tracker's data), with the key it was written under;
 * - `operations`: the idempotency record of each key that committed: fingerprint, time, and the exact tool result;
 * - `fences`: tombstones; a key here can never commit;
 * - `issue_closures`: one row per closed issue (`closeIssue`): the closure is both the data and the
 *   idempotency record of the key it was written under (fingerprint, time, exact tool result);
 * - `call_counts`: durable per-key call counters (`create` counts every write-tool call, `lookup`).
 */
export const ISSUE_STORE_SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS issues (
  number INTEGER PRIMARY KEY AUTOINCREMENT,
  issue_id TEXT NOT NULL UNIQUE,
  idempotency_key TEXT NOT NULL UNIQUE,
  title TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS operations (
  idempotency_key TEXT PRIMARY KEY REFERENCES issues(idempotency_key),
  tool_name TEXT NOT NULL CHECK (tool_name IN ('createIssue')),
  operation_id TEXT NOT NULL UNIQUE REFERENCES issues(issue_id),
  request_fingerprint TEXT NOT NULL,
  committed_at TEXT NOT NULL,
  result_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS fences (
  idempotency_key TEXT PRIMARY KEY,
  fenced_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS issue_closures (
  issue_id TEXT PRIMARY KEY REFERENCES issues(issue_id),
  closure_id TEXT NOT NULL UNIQUE,
  idempotency_key TEXT NOT NULL UNIQUE,
  request_fingerprint TEXT NOT NULL,
  reason TEXT NOT NULL,
  committed_at TEXT NOT NULL,
  result_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS call_counts (
  idempotency_key TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('create', 'lookup')),
  count INTEGER NOT NULL CHECK (count > 0),
  PRIMARY KEY (idempotency_key, kind)
);
`;

/** The schema version written to `PRAGMA user_version`. */
export const ISSUE_STORE_SCHEMA_VERSION = 2;
