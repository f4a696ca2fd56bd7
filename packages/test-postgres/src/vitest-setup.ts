// The vitest glue: one throwaway server per test run, its URL in an environment variable, and a fresh database per test file.
import { startPostgres } from "./start-postgres.js";
import { createTestDatabase, type TestDatabase } from "./test-database.js";

/**
 * The environment variable that carries a PostgreSQL server URL (a role that may create databases)
 * to the tests: set by {@link setupTestPostgres} (a vitest `globalSetup`), or by hand to test
 * against a server you run (then nothing is started).
 */
export const TEST_DATABASE_URL_ENV = "MOSOO_TEST_DATABASE_URL";

/**
 * A vitest `globalSetup` body: starts ONE throwaway server for the whole test run (unless
 * {@link TEST_DATABASE_URL_ENV} is already set) and puts its URL into that variable, which the test
 * workers inherit. Returns the teardown (stops the server). Use it as
 * `export { setupTestPostgres as setup } from "@mosoo/test-postgres";` in a globalSetup file.
 */
export async function setupTestPostgres(): Promise<() => Promise<void>> {
  if (process.env[TEST_DATABASE_URL_ENV]) return async () => undefined;
  const server = await startPostgres({ fsync: false });
  process.env[TEST_DATABASE_URL_ENV] = server.url;
  return async () => {
    delete process.env[TEST_DATABASE_URL_ENV];
    await server.stop();
  };
}

/**
 * A fresh database for one test file on the run's server ({@link TEST_DATABASE_URL_ENV}); when the
 * variable is unset (the file runs outside a config with the global setup), a server is started for
 * this file alone and stopped by `drop()`. Call it in `beforeAll`, `drop()` in `afterAll`.
 * @throws Error when no server can be reached or started.
 */
export async function useTestDatabase(prefix: string): Promise<TestDatabase> {
  const shared = process.env[TEST_DATABASE_URL_ENV];
  if (shared) return createTestDatabase(shared, prefix);
  const server = await startPostgres({ fsync: false });
  const db = await createTestDatabase(server.url, prefix);
  return { ...db, drop: () => db.drop().finally(() => server.stop()) };
}
