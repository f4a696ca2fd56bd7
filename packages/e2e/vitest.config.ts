import { defineProject } from "vitest/config";

export default defineProject({ test: { name: "e2e", include: ["tests/**/*.test.ts"] } });
