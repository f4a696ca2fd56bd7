import type { Db, Tx } from "../../../platform/db/database.js";

/** Either the database or an open transaction: repositories work on both. */
export type DbHandle = Db | Tx;
