import { defineProject } from "vitest/config";

export default defineProject({ test: { name: "driver", include: ["tests/**/*.test.ts"] } });
