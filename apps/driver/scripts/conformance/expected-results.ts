/** What the MCP conformance run claims to pass, and the scenarios the project does not offer, each with its reason. */

/** Which side of MCP a scenario tests: `server` (the fixture provider) or `client` (the Driver's MCP client). */
export type ConformanceSide = "server" | "client";

/**
 * The scenarios the project claims: each must pass, or the run fails. Server: the fixture provider
 * (an issue tracker over stateless Streamable HTTP). Client: the Driver's `McpConnections`.
 */
export const CLAIMED_SCENARIOS: Readonly<Record<ConformanceSide, readonly string[]>> = {
  server: ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"],
  client: ["initialize", "tools_call", "sse-retry"],
};

const NO_TEST_TOOL = "needs the kit's test tools (test_*); an issue tracker offers none";
const FALSE_PASS = "kit 0.1.13 counts the tool-not-found error as a pass; the fixture has no test_* tool, so not claimed";
const NO_OAUTH = "the Driver has no OAuth flow: it sends the static headers of its MCP config";

/**
 * Scenarios the project does not offer, by side, with a one-line reason. A listed scenario may fail
 * without failing the run; one that passes is shown as an unclaimed pass (a pass that proves nothing).
 */
export const NOT_OFFERED: Readonly<Record<ConformanceSide, Readonly<Record<string, string>>>> = {
  server: {
    "logging-set-level": "the fixture declares no logging capability",
    "completion-complete": "the fixture declares no completions capability (it has no prompts or resource templates)",
    "tools-call-simple-text": FALSE_PASS,
    "tools-call-error": FALSE_PASS,
    "tools-call-image": NO_TEST_TOOL,
    "tools-call-audio": NO_TEST_TOOL,
    "tools-call-embedded-resource": NO_TEST_TOOL,
    "tools-call-mixed-content": NO_TEST_TOOL,
    "tools-call-with-logging": NO_TEST_TOOL,
    "tools-call-with-progress": NO_TEST_TOOL,
    "tools-call-sampling": "the fixture never asks the client for sampling",
    "tools-call-elicitation": "the fixture never asks the client for elicitation",
    "elicitation-sep1034-defaults": "the fixture never asks the client for elicitation",
    "elicitation-sep1330-enums": "the fixture never asks the client for elicitation",
    "json-schema-2020-12": NO_TEST_TOOL,
    "server-sse-polling": "the fixture answers JSON, stateless: no SSE stream to poll",
    "server-sse-multiple-streams": "the fixture answers JSON, stateless: no session and no SSE streams",
    "resources-list": "the fixture offers no resources",
    "resources-read-text": "the fixture offers no resources",
    "resources-read-binary": "the fixture offers no resources",
    "resources-templates-read": "the fixture offers no resources",
    "resources-subscribe": "the fixture offers no resources",
    "resources-unsubscribe": "the fixture offers no resources",
    "prompts-list": "the fixture offers no prompts",
    "prompts-get-simple": "the fixture offers no prompts",
    "prompts-get-with-args": "the fixture offers no prompts",
    "prompts-get-embedded-resource": "the fixture offers no prompts",
    "prompts-get-with-image": "the fixture offers no prompts",
  },
  client: {
    "elicitation-sep1034-client-defaults": "the Driver declares no elicitation capability (it runs unattended)",
    ...Object.fromEntries(
      [
        "metadata-default",
        "metadata-var1",
        "metadata-var2",
        "metadata-var3",
        "basic-cimd",
        "scope-from-www-authenticate",
        "scope-from-scopes-supported",
        "scope-omitted-when-undefined",
        "scope-step-up",
        "scope-retry-limit",
        "token-endpoint-auth-basic",
        "token-endpoint-auth-post",
        "token-endpoint-auth-none",
        "resource-mismatch",
        "pre-registration",
        "2025-03-26-oauth-metadata-backcompat",
        "2025-03-26-oauth-endpoint-fallback",
        "client-credentials-jwt",
        "client-credentials-basic",
      ].map((name) => [`auth/${name}`, NO_OAUTH]),
    ),
  },
};
