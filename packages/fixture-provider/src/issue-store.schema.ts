/**
 * The fixture provider's SQLite schema (version 1). Every statement is idempotent, so opening an
 * existing file runs it again harmlessly.
 * - `issues`: one row per committed write (the issue tracker's data), with the key it was written under;
 * - `operations`: the idempotency record of each key that committed: fingerprint, time, and the exact tool result;
 * - `fences`: tombstones; a key here can never commit;
 * - `call_counts`: durable per-key call counters (`create`, `lookup`).
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
CREATE TABLE IF NOT EXISTS call_counts (
  idempotency_key TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('create', 'lookup')),
  count INTEGER NOT NULL CHECK (count > 0),
  PRIMARY KEY (idempotency_key, kind)
);
`;

/** The schema version written to `PRAGMA user_version`. */
export const ISSUE_STORE_SCHEMA_VERSION = 1;
