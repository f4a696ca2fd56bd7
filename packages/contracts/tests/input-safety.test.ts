import { describe, expect, it } from "vitest";
import {
  ArgumentsJsonSchema,
  findJsonProblem,
  identifierSchema,
  MAX_JSON_DEPTH,
  NextCommandQuerySchema,
  RunErrorSchema,
  strictIntegerString,
  ToolNameSchema,
  unknownMosooEnvNames,
} from "../src/index.js";

/** `depth` nested arrays, built without recursion. */
function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i += 1) v = [v];
  return v;
}

describe("findJsonProblem (iterative, DESIGN.md §10)", () => {
  it("accepts exactly MAX_JSON_DEPTH levels and refuses one more", () => {
    expect(findJsonProblem(nested(MAX_JSON_DEPTH))).toBeNull();
    expect(findJsonProblem(nested(MAX_JSON_DEPTH + 1))?.message).toBe("nested deeper than 400 levels");
  });

  it("judges a document nested 1,000,000 levels without overflowing the stack", () => {
    expect(findJsonProblem(nested(1_000_000))?.message).toMatch(/nested deeper/);
  });

  it("names the path of a forbidden key or a lone surrogate", () => {
    expect(findJsonProblem(JSON.parse('{"a":[{"b":{"__proto__":1}}]}'))).toEqual({ path: "a.0.b.__proto__", message: 'the key "__proto__" is not allowed' });
    expect(findJsonProblem({ a: { b: "x\ud800" } })).toEqual({ path: "a.b", message: "must be well-formed UTF-16 (no lone surrogates)" });
    expect(findJsonProblem({ ok: "emoji 😀 is a valid pair" })).toBeNull();
  });
});

describe("identifiers and text", () => {
  it.each(["a\u0000b", "a\u202eb", "a\u2066b", "a\u200fb", "a\nb", "a\u009fb", "a\ud800"])("refuses %j as an identifier", (id) => {
    expect(identifierSchema(1, 64).safeParse(id).success).toBe(false);
    expect(ToolNameSchema.safeParse(id).success).toBe(false);
  });
  it("accepts ordinary identifiers, non-Latin ones included", () => {
    for (const id of ["createIssue", "issues/create", "créer_ticket", "作成"]) expect(ToolNameSchema.safeParse(id).success).toBe(true);
  });
  it("bounds a RunError's details at 4 KiB and refuses forbidden keys there", () => {
    const error = { code: "mcp.tool_call_failed", message: "x", retryable: true };
    expect(RunErrorSchema.safeParse({ ...error, details: { pad: "x".repeat(4000) } }).success).toBe(true);
    expect(RunErrorSchema.safeParse({ ...error, details: { pad: "x".repeat(4097) } }).success).toBe(false);
    expect(RunErrorSchema.safeParse({ ...error, details: JSON.parse('{"constructor":1}') }).success).toBe(false);
  });
  it("applies the JSON rules inside argumentsJson", () => {
    expect(ArgumentsJsonSchema.safeParse('{"__proto__":{}}').success).toBe(false);
    expect(ArgumentsJsonSchema.safeParse(JSON.stringify({ a: nested(500) })).success).toBe(false);
    expect(ArgumentsJsonSchema.safeParse('{"title":"ok"}').success).toBe(true);
  });
});

describe("strict integers", () => {
  it.each(["0x50", "1e2", "+5", " 5", "5 ", "05", "5.0", "", "Infinity", "0b1"])("refuses %j", (text) => {
    expect(strictIntegerString(0, 100_000).safeParse(text).success).toBe(false);
  });
  it("accepts plain decimal text and, in a query, numbers", () => {
    expect(strictIntegerString(0, 100).parse("80")).toBe(80);
    expect(NextCommandQuerySchema.parse({ connectionId: "01JDZZZZZZZZZZZZZZZZZZZZZZ", waitMs: 25_000 }).waitMs).toBe(25_000);
    expect(NextCommandQuerySchema.parse({ connectionId: "01JDZZZZZZZZZZZZZZZZZZZZZZ", waitMs: "100" }).waitMs).toBe(100);
    expect(NextCommandQuerySchema.safeParse({ connectionId: "01JDZZZZZZZZZZZZZZZZZZZZZZ", waitMs: "1e2" }).success).toBe(false);
  });
});

describe("unknown MOSOO_* names", () => {
  it("are those no program's schema declares", () => {
    expect(unknownMosooEnvNames({ MOSOO_PORT: "1", MOSOO_API_URL: "u", MOSOO_PROT: "1", OTHER: "x" })).toEqual(["MOSOO_PROT"]);
  });
});
