import { describe, expect, it } from "vitest";
import { API_ROUTES, DRIVER_API, matchRoute, MAX_BODY_BYTES, routePath, routeQueryString, type ApiRoute } from "../src/index.js";

const entries = Object.entries(API_ROUTES) as Array<[string, ApiRoute]>;

describe("the route table", () => {
  it("names each METHOD path once", () => {
    const keys = entries.map(([, r]) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("declares a params schema exactly for the routes whose path has :parameters, with those keys", () => {
    for (const [name, route] of entries) {
      const inPath = [...route.path.matchAll(/:([A-Za-z0-9]+)/g)].map((m) => m[1]).sort();
      const shape = route.params && "shape" in route.params ? Object.keys((route.params as unknown as { shape: object }).shape).sort() : [];
      expect({ name, params: shape }).toEqual({ name, params: inPath });
    }
  });

  it("gives every route a body limit within the API's global one, and a GET or DELETE no body", () => {
    for (const [name, route] of entries) {
      expect(route.bodyLimitBytes, name).toBeGreaterThan(0);
      expect(route.bodyLimitBytes, name).toBeLessThanOrEqual(MAX_BODY_BYTES);
      if (route.method !== "POST") expect(route.body, name).toBeUndefined();
    }
  });

  it("builds paths with percent-encoded parameters and refuses a missing one", () => {
    expect(routePath(DRIVER_API.effectComplete, { effectId: "01J" })).toBe("/v1/drivers/effects/01J/complete");
    expect(routePath(DRIVER_API.commandUpdate, { commandId: "a/b?c" })).toBe("/v1/drivers/commands/a%2Fb%3Fc/update");
    expect(() => routePath(DRIVER_API.commandUpdate, { commandId: "" })).toThrow(/route.param_missing/);
    expect(() => routePath(DRIVER_API.commandUpdate, {})).toThrow(/route.param_missing/);
    expect(routeQueryString({ connectionId: "C", waitMs: 5, cursor: undefined })).toBe("?connectionId=C&waitMs=5");
    expect(routeQueryString({})).toBe("");
  });

  it("matches a concrete request back to its route (used by test fakes)", () => {
    expect(matchRoute(API_ROUTES, "POST", "/v1/drivers/effects/E1/deadline-missed")).toMatchObject({
      name: "effectDeadlineMissed",
      params: { effectId: "E1" },
    });
    expect(matchRoute(API_ROUTES, "get", "/v1/drivers/commands/next")?.name).toBe("nextCommand");
    expect(matchRoute(API_ROUTES, "DELETE", "/v1/drivers/D1")?.name).toBe("purgeDriver");
    expect(matchRoute(API_ROUTES, "POST", "/v1/drivers/D1")).toBeUndefined();
    // decoded parameters; strict like hono: no trailing slash, no malformed escape
    expect(matchRoute(API_ROUTES, "POST", "/v1/drivers/commands/a%2Fb%3Fc/update")?.params).toEqual({ commandId: "a/b?c" });
    expect(matchRoute(API_ROUTES, "GET", "/v1/drivers/commands/next/")).toBeUndefined();
    expect(matchRoute(API_ROUTES, "POST", "/v1/drivers/commands/%E0%A4%A/update")).toBeUndefined();
  });
});
