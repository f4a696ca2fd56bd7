/** The fixture provider's MCP task store: tasks live as long as the provider process, with a fault that makes them look expired. */
import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import type { CreateTaskOptions, TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import type { CallToolResult, Request, RequestId, Result, Task } from "@modelcontextprotocol/sdk/types.js";

/** Longest task lifetime (ms) the fixture grants, whatever the client asks: 24 h (MCP lets a receiver override the requested `ttl`). */
export const MAX_FIXTURE_TASK_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The MCP task store of one fixture provider (MCP 2025-11-25 "Tasks"), shared by every MCP request the
 * provider serves (its HTTP transport builds one server per request), so a task outlives the
 * connection that created it and the client that asked for it: a Driver that dies after the task id
 * was stored finds the task again through any new connection. Tasks live in memory, as long as the
 * provider process (or until their `ttl`, at most {@link MAX_FIXTURE_TASK_TTL_MS}).
 * While `expired()` answers true (the `expireTasks` fault), every task answers as one whose TTL
 * passed: `tasks/get` and `tasks/result` refuse it as unknown (MCP `-32602`), `tasks/list` is empty;
 * the tasks are kept and answer again once the fault is off.
 */
export class FixtureTaskStore implements TaskStore {
  private readonly inner = new InMemoryTaskStore();

  /** @param expired read on every lookup: true while the `expireTasks` fault is on. */
  constructor(
    private readonly expired: () => boolean,
    private readonly pollIntervalMs: number,
  ) {}

  /** Creates a `working` task with the fixture's poll interval and a TTL of at most {@link MAX_FIXTURE_TASK_TTL_MS}. */
  createTask(taskParams: CreateTaskOptions, requestId: RequestId, request: Request, sessionId?: string): Promise<Task> {
    const ttl = Math.min(taskParams.ttl ?? MAX_FIXTURE_TASK_TTL_MS, MAX_FIXTURE_TASK_TTL_MS);
    return this.inner.createTask({ ...taskParams, ttl, pollInterval: this.pollIntervalMs }, requestId, request, sessionId);
  }

  /** The task, or null when it is unknown, past its TTL, or the `expireTasks` fault is on. */
  async getTask(taskId: string, sessionId?: string): Promise<Task | null> {
    return this.expired() ? null : this.inner.getTask(taskId, sessionId);
  }

  /** Stores a task's final result once (see `InMemoryTaskStore`). */
  storeTaskResult(taskId: string, status: "completed" | "failed", result: Result, sessionId?: string): Promise<void> {
    return this.inner.storeTaskResult(taskId, status, result, sessionId);
  }

  /** @throws Error when the task is unknown, expired (or looks so: the fault), or has no result yet. */
  async getTaskResult(taskId: string, sessionId?: string): Promise<Result> {
    if (this.expired()) throw new Error(`Task with ID ${taskId} not found`);
    return this.inner.getTaskResult(taskId, sessionId);
  }

  /** Moves a task to another status (see `InMemoryTaskStore`; a terminal status is final). */
  updateTaskStatus(taskId: string, status: Task["status"], statusMessage?: string, sessionId?: string): Promise<void> {
    return this.inner.updateTaskStatus(taskId, status, statusMessage, sessionId);
  }

  /** One page of tasks (none while the `expireTasks` fault is on). */
  async listTasks(cursor?: string, sessionId?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    return this.expired() ? { tasks: [] } : this.inner.listTasks(cursor, sessionId);
  }

  /**
   * Ends task `taskId` with the tool's result, unless it already ended (cancelled): `failed` when the
   * result is a tool error (`isError: true`; MCP: a tool call's task fails then), else `completed`.
   * @returns false when the task is gone or already terminal (its result is then dropped).
   */
  async settle(taskId: string, result: CallToolResult): Promise<boolean> {
    try {
      await this.inner.storeTaskResult(taskId, result.isError ? "failed" : "completed", result);
      return true;
    } catch {
      return false;
    }
  }

  /** Drops every task and its TTL timer (on shutdown). */
  close(): void {
    this.inner.cleanup();
  }
}
