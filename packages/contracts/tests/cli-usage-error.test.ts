// Commander's usage errors lose every value the user typed before a CLI prints them.
import { describe, expect, it } from "vitest";
import { usageErrorWithoutValues } from "../src/index.js";

describe("usageErrorWithoutValues", () => {
  it.each([
    ["an unknown option with =", "error: unknown option '--tokne=SECRET'", "error: unknown option '--tokne'"],
    ["a short option with its value attached", "error: unknown option '-zSECRET'", "error: unknown option '-z'"],
    [
      "an unknown option with commander's suggestion",
      "error: unknown option '--limt=SECRET'\n(Did you mean --limit?)",
      "error: unknown option '--limt' (Did you mean --limit?)",
    ],
    [
      "an invalid option value",
      "error: option '--api-url <url>' argument 'http://u:SECRET@h' is invalid. must be an http(s) URL",
      "error: option '--api-url <url>' argument is invalid. must be an http(s) URL",
    ],
    [
      "an invalid value read from an environment variable",
      "error: option '--api-url <url>' value 'https://user:SECRET@h/x?tok=SECRET' from env 'MOSOO_API_URL' is invalid. may not contain credentials",
      "error: option '--api-url <url>' value from env 'MOSOO_API_URL' is invalid. may not contain credentials",
    ],
    ["an unknown command", "error: unknown command 'SECRET'", "error: unknown command"],
    [
      "an unknown command with commander's suggestion",
      "error: unknown command 'SECRET'\n(Did you mean show?)",
      "error: unknown command\n(Did you mean show?)",
    ],
    [
      "an invalid command argument",
      "error: command-argument value 'SECRET' is invalid for argument 'id'. must be a ULID",
      "error: command-argument value is invalid for argument 'id'. must be a ULID",
    ],
  ])("%s", (_label, text, expected) => {
    expect(usageErrorWithoutValues(text)).toBe(expected);
    expect(usageErrorWithoutValues(text)).not.toContain("SECRET");
  });

  it.each([
    ["a misspelt command", "error: unknown command 'lsit'", "error: unknown command 'lsit'"],
    [
      "a misspelt command with a suggestion",
      "error: unknown command 'sho'\n(Did you mean show?)",
      "error: unknown command 'sho'\n(Did you mean show?)",
    ],
    ["a command with a colon or hyphen", "error: unknown command 'store:chek'", "error: unknown command 'store:chek'"],
  ])("names %s (a word that cannot be a secret)", (_label, text, expected) => {
    expect(usageErrorWithoutValues(text)).toBe(expected);
  });

  it.each([
    ["16 lower-case letters (as long as the shortest token accepted)", "abcdefghijklmnop"],
    ["a word with a digit", "hunter2"],
    ["a word with a capital", "Hunter"],
    ["a word with an underscore", "mosoo_op"],
    ["a word with a dot", "sk.live"],
  ])("does not name an unknown command that could be a secret: %s", (_label, word) => {
    expect(usageErrorWithoutValues(`error: unknown command '${word}'`)).toBe("error: unknown command");
  });

  it("leaves any other message as it is", () => {
    expect(usageErrorWithoutValues("error: missing required argument 'effectId'")).toBe("error: missing required argument 'effectId'");
  });
});

describe("an unknown command holding a quote or a newline is never echoed past the quote", () => {
  it.each([
    ["a quote after a command-like prefix", "error: unknown command 'ls'Sk_LiVe_SeCrEt_0123456789'"],
    ["a quote first", "error: unknown command ''Sk_LiVe_SeCrEt_0123456789'"],
    ["a newline inside the word", "error: unknown command 'ls\nSk_LiVe_SeCrEt_0123456789'"],
    ["a forged suggestion inside the word", "error: unknown command 'ls'\n(Did you mean Sk_LiVe_SeCrEt_0123456789?)'"],
  ])("%s", (_label, text) => {
    const line = usageErrorWithoutValues(text);
    expect(line).not.toContain("SeCrEt");
    expect(line).toBe("error: unknown command");
  });
});
