/** Which tools a client may call as MCP tasks: the server's capability, then each tool's `execution.taskSupport`. */
import { describe, expect, it } from "vitest";
import { acceptsToolCallsAsTasks, taskCallableToolNames } from "../src/index.js";

const TASK_CAPABLE = { tasks: { requests: { tools: { call: {} } } } };
const TOOLS = [
  { name: "required", execution: { taskSupport: "required" as const } },
  { name: "absent" },
  { name: "optional", execution: { taskSupport: "optional" as const } },
  { name: "forbidden", execution: { taskSupport: "forbidden" as const } },
  { name: "no-support-field", execution: {} },
];

describe("taskCallableToolNames", () => {
  it("keeps the tools declaring optional or required task support, in list order, when the server accepts task calls", () => {
    expect(taskCallableToolNames(TASK_CAPABLE, TOOLS)).toEqual(["required", "optional"]);
  });

  it("keeps none when the server's capabilities lack tasks.requests.tools.call, whatever the tools declare", () => {
    expect(taskCallableToolNames(undefined, TOOLS)).toEqual([]);
    expect(taskCallableToolNames({}, TOOLS)).toEqual([]);
    expect(taskCallableToolNames({ tasks: { list: {}, cancel: {} } }, TOOLS)).toEqual([]);
    expect(taskCallableToolNames({ tasks: { requests: {} } }, TOOLS)).toEqual([]);
  });

  it("answers an empty list for a server with no tools", () => {
    expect(taskCallableToolNames(TASK_CAPABLE, [])).toEqual([]);
  });
});

describe("acceptsToolCallsAsTasks", () => {
  it("is true only with tasks.requests.tools.call", () => {
    expect(acceptsToolCallsAsTasks(TASK_CAPABLE)).toBe(true);
    expect(acceptsToolCallsAsTasks(undefined)).toBe(false);
    expect(acceptsToolCallsAsTasks({ tasks: { requests: { tools: {} } } })).toBe(false);
  });
});
