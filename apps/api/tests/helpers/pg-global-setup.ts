// vitest globalSetup of the api project (vitest.config.ts): ONE throwaway PostgreSQL server per test run
// (@mosoo/test-postgres), its URL in MOSOO_TEST_DATABASE_URL for every test file; each file that needs it
// creates its own database (useTestDatabase). Set MOSOO_TEST_DATABASE_URL yourself to use a server you run.
export { setupTestPostgres as setup } from "@mosoo/test-postgres";
