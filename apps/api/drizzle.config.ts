import { defineConfig } from "drizzle-kit";

export default defineConfig({ dialect: "sqlite", schema: "./src/platform/db/sqlite/sqlite-schema.ts", out: "./drizzle" });
