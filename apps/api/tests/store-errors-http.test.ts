// The HTTP edge maps the store's unit-of-work failures (docs/DESIGN.md §11): a connection lost during
// COMMIT is 503 store.commit_unknown with Retry-After (repeat the request; every write is a CAS), a
// busy store 503 store.busy, and an aborted transaction (a programming error) 500 internal without a stack.
import { Hono } from "hono";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { ApiErrorBodySchema } from "@mosoo/contracts";
import { toErrorResponse } from "../src/entry/http/http-errors.js";
import { StoreBusyError } from "../src/platform/db/store-busy.js";
import { StoreCommitUnknownError, StoreTransactionAbortedError } from "../src/platform/db/store-errors.js";

function appThrowing(err: Error): Hono {
  const app = new Hono();
  app.get("/x", () => {
    throw err;
  });
  app.onError((e, c) => toErrorResponse(e, c, pino({ level: "silent" })));
  return app;
}

describe("store failures at the HTTP edge", () => {
  it("answers 503 store.commit_unknown with Retry-After for a connection lost during COMMIT", async () => {
    const res = await appThrowing(new StoreCommitUnknownError({ cause: new Error("Connection terminated unexpectedly") })).request("/x");
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    const body = ApiErrorBodySchema.parse(await res.json());
    expect(body.error.code).toBe("store.commit_unknown");
    expect(body.error.message).not.toContain("Connection terminated");
  });

  it("answers 503 store.busy for a busy store and 500 internal for an aborted transaction", async () => {
    const busy = await appThrowing(new StoreBusyError(false)).request("/x");
    expect(busy.status).toBe(503);
    expect(ApiErrorBodySchema.parse(await busy.json()).error.code).toBe("store.busy");
    const aborted = await appThrowing(new StoreTransactionAbortedError()).request("/x");
    expect(aborted.status).toBe(500);
    const text = await aborted.text();
    expect(ApiErrorBodySchema.parse(JSON.parse(text)).error.code).toBe("internal");
    expect(text).not.toContain("at ");
  });
});
