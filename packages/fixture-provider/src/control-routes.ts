// The fixture provider's JSON control API under `/control`: stats, fault switches and releasing held responses.
import { Hono } from "hono";
import { z } from "zod";
import type { FixtureProviderService } from "./fixture-provider.service.js";

/** Body of every 4xx answer of the control API: `{error: {code, message}}`. */
export interface ControlErrorBody {
  error: { code: string; message: string };
}

/**
 * The JSON control API, mounted under `/control`:
 * - `GET  /stats`   → `FixtureStats`;
 * - `GET  /faults`  → `FixtureFaults`;
 * - `POST /faults`  with a `FixtureFaultsPatch` → the `FixtureFaults` now in force; a body that is not
 *   JSON or fails validation → 400 `{error: {code: "request.invalid", message}}`, nothing changes;
 * - `POST /release` → `{released: n}` (every held response is released).
 */
export function createControlRoutes(provider: FixtureProviderService): Hono {
  const app = new Hono();
  app.get("/stats", (c) => c.json(provider.stats()));
  app.get("/faults", (c) => c.json(provider.faults()));
  app.post("/faults", async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return c.json(invalid("the body must be a JSON object"), 400);
    }
    try {
      return c.json(provider.setFaults(body));
    } catch (error) {
      if (error instanceof z.ZodError) return c.json(invalid(z.prettifyError(error)), 400);
      throw error;
    }
  });
  app.post("/release", (c) => c.json({ released: provider.release() }));
  return app;
}

function invalid(message: string): ControlErrorBody {
  return { error: { code: "request.invalid", message } };
}
