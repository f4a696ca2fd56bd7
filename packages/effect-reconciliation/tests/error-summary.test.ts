// An error summary (printed at startup, stored with lookup records) never carries a URL's credentials or query.
import { describe, expect, it } from "vitest";
import { summarizeError } from "../src/host/error-message.js";

describe("summarizeError hides what a URL may carry", () => {
  it.each([
    [
      "credentials",
      new TypeError("Request cannot be constructed from a URL that includes credentials: http://u:SECRET@127.0.0.1:5999/mcp"),
      "TypeError: Request cannot be constructed from a URL that includes credentials: http://***@127.0.0.1:5999/mcp",
    ],
    [
      "a query",
      new Error("fetch failed for https://provider.test/mcp?token=SECRET&x=1"),
      "Error: fetch failed for https://provider.test/mcp?***",
    ],
    ["both, quoted", new Error("bad url 'http://a:SECRET@h/p?k=SECRET'"), "Error: bad url 'http://***@h/p?***'"],
    ["an @ inside the password", new Error("connect postgres://app:p@ss@db:5432/x"), "Error: connect postgres://***@db:5432/x"],
    [
      "a # or / inside the password",
      new Error("bad postgres://app:pa#SECRET@db and postgres://app:pa/SECRET@db"),
      "Error: bad postgres://***@db and postgres://***@db",
    ],
    ["a URL glued to a word", new Error("MY_URL_https://app:SECRET@h"), "Error: MY_URL_https://***@h"],
    ["a fragment", new Error("callback https://h/cb#access_token=SECRET failed"), "Error: callback https://h/cb?*** failed"],
    ["a URL in brackets", new Error("see (https://h/x?token=SECRET) now"), "Error: see (https://h/x?***) now"],
    ["a scheme-relative URL", new Error("bad //app:SECRET@db/x"), "Error: bad //***@db/x"],
    [
      "a percent-encoded URL",
      new Error("bad target=https%3A%2F%2Fapp%3ASECRET%40db%2Fx and https%3A%2F%2Fh%2Fx%3Ftoken%3DSECRET"),
      "Error: bad target=https%3A%2F%2F***%40db%2Fx and https%3A%2F%2Fh%2Fx%3F***",
    ],
    [
      "a libpq connection string",
      new Error("connect host=db user=app password=SECRET dbname=x sslpassword='SEC RET'"),
      "Error: connect host=db user=app password=*** dbname=x sslpassword=***",
    ],
    ["a PGPASSWORD assignment", new Error("env PGPASSWORD=SECRET psql"), "Error: env PGPASSWORD=*** psql"],
  ])("%s", (_label, error, expected) => {
    expect(summarizeError(error)).toBe(expected);
    expect(summarizeError(error)).not.toContain("SECRET");
  });

  it("replaces NUL and other control characters (PostgreSQL refuses a NUL in text)", () => {
    expect(summarizeError(new Error("a\u0000b\u0007c\td"))).toBe("Error: a\ufffdb\ufffdc d");
  });

  it("leaves a message without a URL as it is", () => {
    expect(summarizeError(new Error("lookup timed out after 2000 ms"))).toBe("Error: lookup timed out after 2000 ms");
  });
});
