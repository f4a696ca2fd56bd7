import { defineConfig } from "drizzle-kit";

// The PostgreSQL dialect's migrations (docs/ARCHITECTURE.md "Migrations: how to"): `npm run db:generate:pg`
// (in apps/api) writes apps/api/drizzle-pg/ from src/platform/db/postgres/postgres-schema.ts. The SQLite
// dialect's config is drizzle.config.ts; every schema change is generated for both.
export default defineConfig({ dialect: "postgresql", schema: "./src/platform/db/postgres/postgres-schema.ts", out: "./drizzle-pg" });
