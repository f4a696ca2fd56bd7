import { describe, expect, it } from "vitest";
import {
  ArgumentsJsonSchema,
  CommandUpdateRequestSchema,
  ConnectionRequestSchema,
  CreateRunRequestSchema,
  decodeUtf8Strict,
  EffectClaimRequestSchema,
  EffectCompleteRequestSchema,
  EffectDeadlineMissedRequestSchema,
  EffectLateResultRequestSchema,
  EffectMarkUnknownRequestSchema,
  EnqueueToolCallRequestSchema,
  findJsonProblem,
  FORMAT_CHARACTER_MESSAGE,
  hasFormatCharacter,
  identifierCharsProblem,
  identifierSchema,
  McpExecuteCommandResultSchema,
  RegisterDriverRequestSchema,
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

describe("findJsonProblem (iterative, docs/DESIGN.md §10)", () => {
  it("accepts exactly MAX_JSON_DEPTH levels and refuses one more", () => {
    expect(findJsonProblem(nested(MAX_JSON_DEPTH))).toBeNull();
    expect(findJsonProblem(nested(MAX_JSON_DEPTH + 1))?.message).toBe("nested deeper than 400 levels");
  });

  it("judges a document nested 1,000,000 levels without overflowing the stack", () => {
    expect(findJsonProblem(nested(1_000_000))?.message).toMatch(/nested deeper/);
  });

  it("names the path of a forbidden key or a lone surrogate", () => {
    expect(findJsonProblem(JSON.parse('{"a":[{"b":{"__proto__":1}}]}'))).toEqual({
      path: "a.0.b.__proto__",
      message: 'the key "__proto__" is not allowed',
    });
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

describe("raw bytes must be valid UTF-8 (decodeUtf8Strict)", () => {
  it.each([
    ["a stray FF FE", [0x22, 0xff, 0xfe, 0x22]],
    ["a lone continuation byte", [0x61, 0x80]],
    ["a truncated 3-byte sequence", [0xe2, 0x82]],
    ["an overlong '/' (C0 AF)", [0xc0, 0xaf]],
    ["an encoded surrogate (ED A0 80)", [0xed, 0xa0, 0x80]],
    ["a code point past U+10FFFF (F4 90 80 80)", [0xf4, 0x90, 0x80, 0x80]],
  ])("refuses %s (never U+FFFD)", (_name, bytes) => {
    expect(decodeUtf8Strict(new Uint8Array(bytes))).toBeNull();
  });
  it("decodes valid UTF-8 exactly (multi-byte and astral included) and drops only a leading byte order mark", () => {
    const text = '{"title":"créer 作成 👩\u200d💻"}';
    expect(decodeUtf8Strict(Buffer.from(text, "utf8"))).toBe(text);
    expect(decodeUtf8Strict(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]))).toBe("{}");
    expect(decodeUtf8Strict(new Uint8Array([0x7b, 0xef, 0xbb, 0xbf, 0x7d]))).toBe("{\ufeff}");
    expect(decodeUtf8Strict(new ArrayBuffer(0))).toBe("");
  });
  it("can be called again after a refusal (the fatal decoder keeps no state)", () => {
    expect(decodeUtf8Strict(new Uint8Array([0xe2, 0x82]))).toBeNull();
    expect(decodeUtf8Strict(new Uint8Array([0xac]))).toBeNull();
    expect(decodeUtf8Strict(new Uint8Array([0xe2, 0x82, 0xac]))).toBe("€");
  });
});

describe("identifiers refuse Unicode format characters (Cf)", () => {
  const FORMAT = ["\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\u2062", "\ufeff", "\u180e", "\u{E0041}", "\u{E0001}"];
  it.each(FORMAT.map((ch) => [`U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`, ch]))(
    "refuses %s inside a tool name, with its own message",
    (_name, ch) => {
      expect(hasFormatCharacter(`create${ch}Issue`)).toBe(true);
      const parsed = ToolNameSchema.safeParse(`create${ch}Issue`);
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues.map((i) => i.message)).toEqual([FORMAT_CHARACTER_MESSAGE]);
      expect(identifierCharsProblem(`${ch}x`)).toBe(FORMAT_CHARACTER_MESSAGE);
    },
  );
  it("still names a bidi character as a bidi character (reported first)", () => {
    expect(ToolNameSchema.safeParse("a\u202eb").error?.issues[0]?.message).toBe("must not contain control or bidi characters");
    expect(identifierCharsProblem("a\u2066b")).toBe("must not contain control or bidi characters");
    expect(identifierCharsProblem("a\ud800")).toMatch(/well-formed UTF-16/);
  });
  it("accepts identifiers without format characters, and free text keeps them", () => {
    for (const id of ["createIssue", "créer_ticket", "作成", "issues/create", "a-b.c"]) expect(identifierCharsProblem(id)).toBeNull();
    expect(hasFormatCharacter("createIssue")).toBe(false);
    // U+200D joins an emoji in an argument or an output text: text, not an identifier
    expect(
      McpExecuteCommandResultSchema.safeParse({ outputText: "👩\u200d💻", requestId: "r", serverId: "s", toolName: "t" }).success,
    ).toBe(true);
  });
});

describe("request bodies are strict (an unknown field is refused and named)", () => {
  const ULID = "01JDZZZZZZZZZZZZZZZZZZZZZZ";
  const result = { outputText: "ok", requestId: "r", serverId: "tracker", toolName: "createIssue" };
  const error = { code: "mcp.tool_call_failed", message: "x", retryable: true, details: {} };
  const cases: Array<
    [
      string,
      { safeParse: (v: unknown) => { success: boolean; error?: { issues: Array<{ message: string; path: PropertyKey[] }> } } },
      Record<string, unknown>,
      string[],
    ]
  > = [
    ["create run", CreateRunRequestSchema, { driverInstanceId: ULID }, []],
    ["enqueue tool call", EnqueueToolCallRequestSchema, { serverId: "tracker", toolName: "createIssue", arguments: {} }, []],
    ["register", RegisterDriverRequestSchema, { name: "driver-a" }, []],
    ["heartbeat", ConnectionRequestSchema, { connectionId: ULID }, []],
    ["command update accepted", CommandUpdateRequestSchema, { connectionId: ULID, status: "accepted" }, []],
    ["command update completed (result)", CommandUpdateRequestSchema, { connectionId: ULID, status: "completed", result }, ["result"]],
    ["command update failed (error)", CommandUpdateRequestSchema, { connectionId: ULID, status: "failed", error }, ["error"]],
    ["claim", EffectClaimRequestSchema, { connectionId: ULID, commandId: ULID }, []],
    ["complete (result)", EffectCompleteRequestSchema, { connectionId: ULID, attempt: 1, result, receipt: null }, ["result"]],
    ["mark-unknown", EffectMarkUnknownRequestSchema, { connectionId: ULID, attempt: 1, reason: "lost" }, []],
    ["deadline-missed", EffectDeadlineMissedRequestSchema, { connectionId: ULID, attempt: 1, elapsedMs: 3 }, []],
    [
      "late-result (result)",
      EffectLateResultRequestSchema,
      {
        connectionId: ULID,
        attempt: 1,
        idempotencyKey: ULID,
        toolName: "createIssue",
        requestFingerprint: "0".repeat(64),
        result,
        receipt: null,
      },
      ["result"],
    ],
  ];
  it.each(cases)(
    "%s: accepts the exact body, refuses an extra field at the top and in each nested object",
    (_name, schema, body, nested) => {
      expect(schema.safeParse(body).success).toBe(true);
      const top = schema.safeParse({ ...body, extra: 1 });
      expect(top.success).toBe(false);
      expect(top.error?.issues[0]).toMatchObject({ path: [], message: 'Unrecognized key: "extra"' });
      for (const key of nested) {
        const inner = schema.safeParse({ ...body, [key]: { ...(body[key] as object), extra: 1 } });
        expect(inner.success).toBe(false);
        expect(inner.error?.issues[0]).toMatchObject({ path: [key], message: 'Unrecognized key: "extra"' });
      }
    },
  );
  it("keeps the loose result schema for what the runtime reads back (an API answer, a stored result)", () => {
    expect(McpExecuteCommandResultSchema.safeParse({ ...result, extra: 1 }).success).toBe(true);
  });
});

describe("unknown MOSOO_* names", () => {
  it("are those no program's schema declares", () => {
    expect(unknownMosooEnvNames({ MOSOO_PORT: "1", MOSOO_API_URL: "u", MOSOO_PROT: "1", OTHER: "x" })).toEqual(["MOSOO_PROT"]);
  });
});
