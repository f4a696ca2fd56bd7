// createTestDatabase's admin connection has a connect timeout: a server that accepts TCP but never
// answers fails with test_postgres.connect_timeout instead of hanging the test run's setup.
import { createServer, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { createTestDatabase } from "../src/index.js";

describe("createTestDatabase connect timeout", () => {
  it("fails with test_postgres.connect_timeout on a silent server, without the password in the message", async () => {
    const sockets: Socket[] = [];
    const server = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    try {
      const failure = await createTestDatabase(`postgres://postgres:s3cretpw@127.0.0.1:${port}/postgres`, "t", {
        connectTimeoutMs: 300,
      }).then(
        () => undefined,
        (error: unknown) => error as Error & { code?: string },
      );
      expect(failure?.code).toBe("test_postgres.connect_timeout");
      expect(failure?.message).toContain(`127.0.0.1:${port}/postgres within 300 ms`);
      expect(failure?.message).not.toContain("s3cretpw");
      expect(sockets.length).toBeGreaterThan(0);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
