import { mkdtemp, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newUlid } from "@mosoo/contracts";
import { describe, expect, it } from "vitest";
import type { DriverState } from "../src/driver-config.contract.js";
import { DriverConfigError } from "../src/driver-config.loader.js";
import { DriverStateRepository } from "../src/driver-state.repository.js";

function sampleState(): DriverState {
  const driverInstanceId = newUlid();
  return { apiUrl: "http://127.0.0.1:8080", driverInstanceId, driverToken: `mdt_${driverInstanceId}_${"s".repeat(40)}` };
}

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), "driver-state-"));
}

describe("DriverStateRepository", () => {
  it("round-trips the state through a new directory, with mode 0600 and no temporary file left", async () => {
    const dir = await tempDir();
    const file = join(dir, "nested", "var", "driver-state.json");
    const repo = new DriverStateRepository(file);
    const state = sampleState();
    await repo.save(state);
    expect(await new DriverStateRepository(file).load()).toEqual(state);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readdir(join(dir, "nested", "var"))).toEqual(["driver-state.json"]);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual(state);
  });

  it("overwrites atomically and keeps mode 0600", async () => {
    const file = join(await tempDir(), "state.json");
    const repo = new DriverStateRepository(file);
    await repo.save(sampleState());
    const second = sampleState();
    await repo.save(second);
    expect(await repo.load()).toEqual(second);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it("returns null when the file does not exist, and remove() is idempotent", async () => {
    const repo = new DriverStateRepository(join(await tempDir(), "none.json"));
    expect(await repo.load()).toBeNull();
    await repo.save(sampleState());
    await repo.remove();
    await repo.remove();
    expect(await repo.load()).toBeNull();
  });

  it("refuses a corrupt or malformed state file with config.invalid", async () => {
    const dir = await tempDir();
    const corrupt = join(dir, "corrupt.json");
    await writeFile(corrupt, "{not json");
    await expect(new DriverStateRepository(corrupt).load()).rejects.toBeInstanceOf(DriverConfigError);
    const wrong = join(dir, "wrong.json");
    await writeFile(wrong, JSON.stringify({ ...sampleState(), driverToken: "secret" }));
    await expect(new DriverStateRepository(wrong).load()).rejects.toThrow(/driverToken: malformed driver token/);
  });

  it("refuses to save an invalid state (nothing written)", async () => {
    const file = join(await tempDir(), "state.json");
    const repo = new DriverStateRepository(file);
    await expect(repo.save({ ...sampleState(), driverInstanceId: "nope" })).rejects.toThrow();
    expect(await repo.load()).toBeNull();
  });
});
