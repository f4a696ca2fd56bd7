// The test-postgres package's public entry: throwaway PostgreSQL servers, per-test databases and the vitest setup.
export { startPostgres, type StartPostgresOptions, type RunningPostgres } from "./start-postgres.js";
export { cleanStaleServers, isAlive, SERVER_FOLDER_PREFIX } from "./server-folders.js";
export { createTestDatabase, withDatabase, type CreateTestDatabaseOptions, type TestDatabase } from "./test-database.js";
export { setupTestPostgres, useTestDatabase, TEST_DATABASE_URL_ENV } from "./vitest-setup.js";
