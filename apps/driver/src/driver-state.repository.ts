// The Driver's identity on disk (API URL, instance id, token), written atomically and durably with owner-only access.
import { readFile } from "node:fs/promises";
import { DriverStateSchema, type DriverState } from "./driver-config.contract.js";
import { DriverConfigError, formatZodIssues } from "./driver-config.loader.js";
import { removeFileDurably, writeFileDurably } from "./durable-file.js";

/** File mode of the state file: owner read/write only (it holds a bearer token). */
export const DRIVER_STATE_FILE_MODE = 0o600;

/**
 * The Driver's identity on disk (`--state-file`): `{apiUrl, driverInstanceId, driverToken}` as JSON.
 * Writes are atomic and durable (`writeFileDurably`: temporary file in the same directory, fsync,
 * rename, fsync of the directory) with mode 0600, so a crash never leaves a half-written token behind.
 */
export class DriverStateRepository {
  /** @param filePath path of the state file; its directory is created on the first save. */
  constructor(readonly filePath: string) {}

  /**
   * Reads the state file.
   * @returns the state, or `null` when the file does not exist.
   * @throws DriverConfigError (`config.invalid`) when the file is unreadable, not JSON or of the wrong shape.
   */
  async load(): Promise<DriverState | null> {
    let text: string;
    try {
      text = await readFile(this.filePath, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return null;
      throw new DriverConfigError(`cannot read state file ${this.filePath}: ${code ?? "EIO"}`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new DriverConfigError(`state file ${this.filePath} is not valid JSON; move it away to register a new Driver instance`);
    }
    const parsed = DriverStateSchema.safeParse(json);
    if (!parsed.success) throw new DriverConfigError(`state file ${this.filePath} is invalid: ${formatZodIssues(parsed.error)}`);
    return parsed.data;
  }

  /**
   * Writes the state atomically with mode 0600 (creates the directory, mode 0700, if needed).
   * @throws Error (fs errors) when the directory or file cannot be written.
   */
  async save(state: DriverState): Promise<void> {
    const valid = DriverStateSchema.parse(state);
    await writeFileDurably(this.filePath, `${JSON.stringify(valid, null, 2)}\n`, DRIVER_STATE_FILE_MODE);
  }

  /** Deletes the state file (after `finalize`: the instance is gone for good). Missing file is fine. */
  async remove(): Promise<void> {
    await removeFileDurably(this.filePath);
  }
}
