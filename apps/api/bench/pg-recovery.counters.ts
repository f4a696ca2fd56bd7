// Counts what one API instance of the PostgreSQL recovery bench sends to the server: round trips by statement kind, rows, failures.
import pg from "pg";

/**
 * The kinds of statement the recovery instance sends, told apart by their SQL text (see {@link statementKind}):
 * transaction control, the sweep's due page (`FOR UPDATE SKIP LOCKED`), the batch lease, the single
 * lease, a lease given back, the outcome's compare-and-set, the run event it appends, the record insert, the re-read of one effect
 * (what a lost lease costs), the expired-lease cleanup, the Driver part of the maintenance pass, the
 * bench's own `count(*)` of what is left, and the rest.
 */
const STATEMENT_KINDS = [
  "begin",
  "commit",
  "rollback",
  "duePage",
  "leaseBatch",
  "leaseOne",
  "releaseLease",
  "commitOutcome",
  "runEvent",
  "insertRecord",
  "effectById",
  "expiredLeases",
  "driverPart",
  "benchCount",
  "other",
] as const;
/** See {@link STATEMENT_KINDS}. */
export type StatementKind = (typeof STATEMENT_KINDS)[number];

/**
 * What an instance sent over its recovery (counts): `roundTrips` (every `pg.Client.query`: one round trip each;
 * a named prepared statement is parsed in the same round trip as its first run), `statements` by kind, `rows` by
 * kind (rows the server reported: read for a page, written for an update), and `failed` statements by SQLSTATE
 * (e.g. `40P01` deadlock, `23505` unique; `none` when the error carried no code).
 */
export interface StatementCounts {
  roundTrips: number;
  statements: Partial<Record<StatementKind, number>>;
  rows: Partial<Record<StatementKind, number>>;
  failed: Record<string, number>;
}

/** The kind of a statement from its SQL text (drizzle's lower-case SQL, or the bench's and the store's own). */
export function statementKind(text: string): StatementKind {
  const t = text.trimStart();
  if (/^BEGIN/i.test(t)) return "begin";
  if (/^COMMIT/i.test(t)) return "commit";
  if (/^ROLLBACK/i.test(t)) return "rollback";
  if (/for update skip locked/i.test(t)) return "duePage";
  if (/count\(\*\) AS n FROM external_tool_effects WHERE status = 'unknown'/.test(t)) return "benchCount";
  if (/^WITH bumped AS \(update "session_runs"/.test(t)) return "runEvent";
  // the PostgreSQL outcome (compare-and-set, record and run event in one statement) and a batch's give-backs
  if (/^WITH upd AS \(\s*UPDATE "external_tool_effects"/.test(t)) return "commitOutcome";
  if (/^UPDATE "external_tool_effects" AS e\s+SET "lease_owner" = NULL/.test(t)) return "releaseLease";
  if (/^update "external_tool_effects" set /.test(t)) {
    // a lease counts its lookup; a give-back uncounts it (CASE) or only clears the lease columns
    if (/"lookup_count" = "external_tool_effects"\."lookup_count" \+ 1/.test(t)) return / in \(/.test(t) ? "leaseBatch" : "leaseOne";
    if (/CASE WHEN/.test(t) || /^update "external_tool_effects" set "lease_owner" = \$1, "lease_expires_at_ms" = \$2 where/.test(t))
      return "releaseLease";
    return "commitOutcome";
  }
  if (/^insert into "effect_reconciliations"/.test(t)) return "insertRecord";
  if (/^select .* from "external_tool_effects" where .*"lease_owner" is not null/.test(t)) return "expiredLeases";
  if (/^select .* from "external_tool_effects" where "external_tool_effects"\."id" = \$1/.test(t)) return "effectById";
  if (/"work_claims"|"store_liveness"|"driver_instances"/.test(t)) return "driverPart";
  return "other";
}

/** The SQL text of a `pg.Client.query` call's first argument (a string or a query config), or "" when neither. */
function textOf(arg: unknown): string {
  if (typeof arg === "string") return arg;
  if (arg && typeof arg === "object" && typeof (arg as { text?: unknown }).text === "string") return (arg as { text: string }).text;
  return "";
}

/**
 * Counts, from now until `stop()`, every `pg.Client.prototype.query` of this process ({@link StatementCounts}).
 * The counter is process-wide: install it in an instance process that runs nothing else against the server.
 * `stop()` puts the original back and returns the counts.
 */
export function countStatements(): { counts: StatementCounts; stop: () => StatementCounts } {
  const counts: StatementCounts = { roundTrips: 0, statements: {}, rows: {}, failed: {} };
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  const settle = (kind: StatementKind, err: unknown, res: unknown) => {
    if (err) {
      const code = (err as { code?: unknown }).code;
      const key = typeof code === "string" ? code : "none";
      counts.failed[key] = (counts.failed[key] ?? 0) + 1;
      return;
    }
    const rowCount = (res as { rowCount?: unknown } | undefined)?.rowCount;
    if (typeof rowCount === "number") counts.rows[kind] = (counts.rows[kind] ?? 0) + rowCount;
  };
  proto.query = function countedQuery(this: unknown, ...args: unknown[]) {
    const kind = statementKind(textOf(args[0]));
    counts.roundTrips += 1;
    counts.statements[kind] = (counts.statements[kind] ?? 0) + 1;
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === "function") {
      args[last] = (err: unknown, res: unknown) => {
        settle(kind, err, res);
        return (callback as (e: unknown, r: unknown) => unknown)(err, res);
      };
      return original.apply(this, args);
    }
    const out = original.apply(this, args);
    if (out && typeof (out as Promise<unknown>).then === "function")
      (out as Promise<unknown>).then(
        (res) => settle(kind, undefined, res),
        (err: unknown) => settle(kind, err, undefined),
      );
    return out;
  };
  return {
    counts,
    stop: () => {
      proto.query = original;
      return counts;
    },
  };
}
