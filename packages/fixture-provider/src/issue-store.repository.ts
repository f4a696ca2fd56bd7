// The fixture provider's durable SQLite store: one immediate transaction per write or lookup, so a fence and a late commit never both win.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { newUlid } from "@mosoo/contracts";
import { buildCloseIssueResult, CloseIssueToolResultSchema } from "./close-issue.contract.js";
import type { CloseIssueArgs, CloseIssueToolResult } from "./close-issue.contract.js";
import { buildCreateIssueResult, CreateIssueToolResultSchema } from "./create-issue.contract.js";
import type { CreateIssueArgs, CreateIssueToolResult } from "./create-issue.contract.js";
import type { GetOperationAnswer } from "./get-operation.contract.js";
import type { FixtureStats } from "./fixture-stats.contract.js";
import { ISSUE_STORE_SCHEMA_SQL, ISSUE_STORE_SCHEMA_VERSION } from "./issue-store.schema.js";

/**
 * What one commit transaction of a write tool decided. Only `committed` wrote anything. `R` is the
 * tool's result type. `closeIssue` can also answer `issue_not_found` / `issue_already_closed`.
 */
export type CommitOutcome<R = CreateIssueToolResult> =
  | { kind: "committed"; result: R }
  | { kind: "replayed"; result: R }
  | { kind: "conflict"; recordedFingerprint: string }
  | { kind: "fenced"; fencedAt: string }
  | { kind: "issue_not_found" }
  | { kind: "issue_already_closed"; closedAt: string };

/** Input of {@link IssueStore.commitCloseIssue}. */
export interface CommitCloseIssueInput {
  idempotencyKey: string;
  args: CloseIssueArgs;
  /** `fingerprintArguments(args)`: 64 hex characters. */
  requestFingerprint: string;
}

/** Input of {@link IssueStore.commitCreateIssue}. */
export interface CommitCreateIssueInput {
  idempotencyKey: string;
  args: CreateIssueArgs;
  /** `fingerprintArguments(args)`: 64 hex characters. */
  requestFingerprint: string;
}

interface OperationRow {
  tool_name: "createIssue" | "closeIssue";
  operation_id: string;
  request_fingerprint: string;
  committed_at: string;
  result_json: string;
}

/**
 * The fixture provider's durable store: one SQLite file (better-sqlite3, WAL, `synchronous=FULL`,
 * `busy_timeout=5000` ms). Every decision (replay / conflict / fence / insert; lookup / tombstone)
 * runs in ONE `BEGIN IMMEDIATE` transaction, so a fence and a late commit can never both win,
 * even with several processes on the same file. All methods are synchronous and throw the
 * better-sqlite3 `SqliteError` on I/O failure; a throw inside a transaction rolls it back.
 */
export class IssueStore {
  private constructor(private readonly db: Database.Database) {}

  /**
   * Opens (creating if needed, parent directory included) the SQLite file and applies the schema.
   * @param dbFile path of the database file.
   * @throws SqliteError / filesystem errors when the file cannot be opened or written.
   */
  static open(dbFile: string): IssueStore {
    mkdirSync(dirname(dbFile), { recursive: true });
    const db = new Database(dbFile);
    try {
      db.pragma("journal_mode = WAL");
      if (db.pragma("journal_mode", { simple: true }) !== "wal") throw new Error(`could not enable WAL on ${dbFile}`);
      db.pragma("synchronous = FULL");
      db.pragma("foreign_keys = ON");
      db.pragma("busy_timeout = 5000");
      db.exec(ISSUE_STORE_SCHEMA_SQL);
      db.pragma(`user_version = ${ISSUE_STORE_SCHEMA_VERSION}`);
    } catch (error) {
      db.close();
      throw error;
    }
    return new IssueStore(db);
  }

  /** Counts one `createIssue` call under `idempotencyKey` (its own small transaction, durable before the call goes on). */
  recordCreateCall(idempotencyKey: string): void {
    this.bump(idempotencyKey, "create");
  }

  /**
   * The commit transaction of `createIssue`: a recorded key with the same fingerprint → `replayed`
   * (the recorded result, nothing written); another fingerprint → `conflict`; a fenced key →
   * `fenced`; otherwise inserts the issue and its operation record → `committed`. `committedAt` is
   * taken inside the transaction.
   */
  commitCreateIssue(input: CommitCreateIssueInput): CommitOutcome {
    return this.db
      .transaction((): CommitOutcome => {
        const settled = this.replayConflictOrFence("createIssue", input, parseResult);
        if (settled) return settled;

        const committedAt = new Date().toISOString();
        const issueId = newUlid();
        const inserted = this.db
          .prepare("INSERT INTO issues (issue_id, idempotency_key, title, body, created_at) VALUES (?, ?, ?, ?, ?)")
          .run(issueId, input.idempotencyKey, input.args.title, input.args.body, committedAt);
        const result = buildCreateIssueResult({ issueId, number: Number(inserted.lastInsertRowid), title: input.args.title }, committedAt);
        this.db
          .prepare(
            `INSERT INTO operations (idempotency_key, tool_name, operation_id, request_fingerprint, committed_at, result_json)
           VALUES (?, 'createIssue', ?, ?, ?, ?)`,
          )
          .run(input.idempotencyKey, issueId, input.requestFingerprint, committedAt, JSON.stringify(result));
        return { kind: "committed", result };
      })
      .immediate();
  }

  /**
   * The commit transaction of `closeIssue`, with the same replay / conflict / fence rules as
   * {@link commitCreateIssue} (a key already used by `createIssue` is a `conflict`); then an unknown
   * issue → `issue_not_found`, an issue another key closed → `issue_already_closed`; otherwise
   * records the closure (its own id, the reason, the time) → `committed`.
   */
  commitCloseIssue(input: CommitCloseIssueInput): CommitOutcome<CloseIssueToolResult> {
    return this.db
      .transaction((): CommitOutcome<CloseIssueToolResult> => {
        const settled = this.replayConflictOrFence("closeIssue", input, parseCloseResult);
        if (settled) return settled;
        const issue = this.db.prepare<[string], { number: number }>("SELECT number FROM issues WHERE issue_id = ?").get(input.args.issueId);
        if (!issue) return { kind: "issue_not_found" };
        const closed = this.db
          .prepare<[string], { committed_at: string }>("SELECT committed_at FROM issue_closures WHERE issue_id = ?")
          .get(input.args.issueId);
        if (closed) return { kind: "issue_already_closed", closedAt: closed.committed_at };
        const committedAt = new Date().toISOString();
        const closureId = newUlid();
        const result = buildCloseIssueResult({ issueId: input.args.issueId, number: issue.number, closureId }, committedAt);
        this.db
          .prepare(
            `INSERT INTO issue_closures (issue_id, closure_id, idempotency_key, request_fingerprint, reason, committed_at, result_json)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            input.args.issueId,
            closureId,
            input.idempotencyKey,
            input.requestFingerprint,
            input.args.reason ?? "",
            committedAt,
            JSON.stringify(result),
          );
        return { kind: "committed", result };
      })
      .immediate();
  }

  /**
   * The lookup transaction of `getOperation`: counts the lookup, then answers `found` with the
   * recorded operation, or `not found`. On a miss with `fenceOnMiss`, writes a tombstone for the key in
   * the same transaction (so no later commit can land) and reports `fenced: true`. With `forgetKeys`,
   * a committed key answers `{found: false, fenced: false}` as a provider that dropped it would (the
   * write stays stored, no fence is written for it). Never creates an issue.
   */
  lookupOperation(idempotencyKey: string, options: { fenceOnMiss: boolean; forgetKeys?: boolean }): GetOperationAnswer {
    return this.db
      .transaction((): GetOperationAnswer => {
        this.bump(idempotencyKey, "lookup");
        const recorded = this.findOperation(idempotencyKey);
        // A forgotten key answers as a plain miss; the write itself stays stored and is never fenced.
        if (recorded && options.forgetKeys === true)
          return { found: false, idempotencyKey, fenced: false, observedAt: new Date().toISOString() };
        if (recorded) {
          const common = {
            found: true as const,
            idempotencyKey,
            operationId: recorded.operation_id,
            requestFingerprint: recorded.request_fingerprint,
            committedAt: recorded.committed_at,
          };
          return recorded.tool_name === "createIssue"
            ? { ...common, toolName: "createIssue", result: parseResult(recorded.result_json) }
            : { ...common, toolName: "closeIssue", result: parseCloseResult(recorded.result_json) };
        }
        const observedAt = new Date().toISOString();
        let fenced = this.db.prepare("SELECT 1 FROM fences WHERE idempotency_key = ?").get(idempotencyKey) !== undefined;
        if (!fenced && options.fenceOnMiss) {
          this.db.prepare("INSERT INTO fences (idempotency_key, fenced_at) VALUES (?, ?)").run(idempotencyKey, observedAt);
          fenced = true;
        }
        return { found: false, idempotencyKey, fenced, observedAt };
      })
      .immediate();
  }

  /**
   * What the provider really holds for `idempotencyKey`, read without side effects (no lookup counted,
   * no fence written): the ground truth a conformance kit judges adapter answers against.
   */
  peek(
    idempotencyKey: string,
  ): { state: "committed"; toolName: string; requestFingerprint: string; result: unknown } | { state: "absent"; fenced: boolean } {
    const recorded = this.findOperation(idempotencyKey);
    if (recorded)
      return {
        state: "committed",
        toolName: recorded.tool_name,
        requestFingerprint: recorded.request_fingerprint,
        result: JSON.parse(recorded.result_json),
      };
    return { state: "absent", fenced: this.findFence(idempotencyKey) !== undefined };
  }

  /** Per-key counters, all read from the database (see `FixtureStatsSchema`). */
  stats(): FixtureStats {
    const counts = (sql: string): Record<string, number> =>
      Object.fromEntries(
        this.db
          .prepare<[], { k: string; n: number }>(sql)
          .all()
          .map((row) => [row.k, row.n]),
      );
    return {
      writes: counts(
        `SELECT k, COUNT(*) AS n FROM (SELECT idempotency_key AS k FROM issues UNION ALL SELECT idempotency_key AS k FROM issue_closures)
         GROUP BY k ORDER BY k`,
      ),
      createCalls: counts("SELECT idempotency_key AS k, count AS n FROM call_counts WHERE kind = 'create' ORDER BY k"),
      lookups: counts("SELECT idempotency_key AS k, count AS n FROM call_counts WHERE kind = 'lookup' ORDER BY k"),
      fenced: this.db
        .prepare<[], { k: string }>("SELECT idempotency_key AS k FROM fences ORDER BY k")
        .all()
        .map((row) => row.k),
    };
  }

  /**
   * The connection's durability pragmas, for diagnostics: `journalMode` ("wal") and `synchronous`
   * (SQLite's number: 2 = FULL).
   */
  durabilitySettings(): { journalMode: string; synchronous: number } {
    return {
      journalMode: String(this.db.pragma("journal_mode", { simple: true })),
      synchronous: Number(this.db.pragma("synchronous", { simple: true })),
    };
  }

  /** Whether the database is open. */
  get isOpen(): boolean {
    return this.db.open;
  }

  /** Closes the database. Idempotent. */
  close(): void {
    if (this.db.open) this.db.close();
  }

  /**
   * The decision every write makes first, inside its transaction: the key already recorded the same
   * request of the same tool → `replayed`; another request or tool → `conflict`; a tombstone →
   * `fenced`; otherwise `null` (the write may go on).
   */
  private replayConflictOrFence<R>(
    tool: OperationRow["tool_name"],
    input: { idempotencyKey: string; requestFingerprint: string },
    parse: (json: string) => R,
  ): CommitOutcome<R> | null {
    const recorded = this.findOperation(input.idempotencyKey);
    if (recorded) {
      if (recorded.tool_name !== tool || recorded.request_fingerprint !== input.requestFingerprint) {
        return { kind: "conflict", recordedFingerprint: recorded.request_fingerprint };
      }
      return { kind: "replayed", result: parse(recorded.result_json) };
    }
    const fence = this.findFence(input.idempotencyKey);
    return fence ? { kind: "fenced", fencedAt: fence.fenced_at } : null;
  }

  /** The write recorded under `idempotencyKey`, by either write tool (a key is used by at most one). */
  private findOperation(idempotencyKey: string): OperationRow | undefined {
    return this.db
      .prepare<[string, string], OperationRow>(
        `SELECT 'createIssue' AS tool_name, operation_id, request_fingerprint, committed_at, result_json FROM operations WHERE idempotency_key = ?
         UNION ALL
         SELECT 'closeIssue' AS tool_name, closure_id AS operation_id, request_fingerprint, committed_at, result_json FROM issue_closures WHERE idempotency_key = ?`,
      )
      .get(idempotencyKey, idempotencyKey);
  }

  private findFence(idempotencyKey: string): { fenced_at: string } | undefined {
    return this.db.prepare<[string], { fenced_at: string }>("SELECT fenced_at FROM fences WHERE idempotency_key = ?").get(idempotencyKey);
  }

  private bump(idempotencyKey: string, kind: "create" | "lookup"): void {
    this.db
      .prepare(
        `INSERT INTO call_counts (idempotency_key, kind, count) VALUES (?, ?, 1)
         ON CONFLICT (idempotency_key, kind) DO UPDATE SET count = count + 1`,
      )
      .run(idempotencyKey, kind);
  }
}

function parseResult(json: string): CreateIssueToolResult {
  return CreateIssueToolResultSchema.parse(JSON.parse(json));
}

function parseCloseResult(json: string): CloseIssueToolResult {
  return CloseIssueToolResultSchema.parse(JSON.parse(json));
}
