// Which tools of a bound server get lookups, and narrowing an adapter to the tools its binding names.
import type { LookupContext, LookupRequest, ReconciliationAdapter } from "../author/adapter.contract.js";
import { ReconciliationError } from "./reconciliation-errors.js";

/**
 * Which tools of a bound server get lookups: `covered` (declared by the adapter and, when the
 * binding narrows it, named in the binding's `tools`) and `notCovered` (declared but left out by
 * the binding). A tool outside both is "not declared by the adapter".
 */
export interface ToolCoverage {
  covered: string[];
  notCovered: string[];
}

/**
 * Narrows `adapter` to `tools` (a binding's optional tool list, docs/DESIGN.md §4 "Bindings may narrow a
 * binding to tools"): the returned adapter declares only those tools (and only the compensations
 * whose both tools stay covered), so the reconcile step never looks up another tool. Without
 * `tools` the adapter is returned as is.
 * @throws ReconciliationError `binding.tool_not_declared` when `tools` names a tool the adapter does not declare.
 */
export function narrowAdapter(
  adapter: ReconciliationAdapter,
  tools: readonly string[] | undefined,
): { adapter: ReconciliationAdapter; coverage: ToolCoverage } {
  const declared = adapter.declaration.tools;
  if (tools === undefined) return { adapter, coverage: { covered: [...declared], notCovered: [] } };
  for (const tool of tools) {
    if (!declared.includes(tool)) {
      throw new ReconciliationError(
        "binding.tool_not_declared",
        `tool "${tool}" is not declared by adapter "${adapter.declaration.id}" (it declares ${declared.join(", ")})`,
        {
          details: { adapterId: adapter.declaration.id, toolName: tool },
        },
      );
    }
  }
  const covered = declared.filter((t) => tools.includes(t));
  const compensations = Object.fromEntries(
    Object.entries(adapter.declaration.compensations ?? {}).filter(([tool, c]) => covered.includes(tool) && covered.includes(c.toolName)),
  );
  const { compensations: _all, ...rest } = adapter.declaration;
  const declaration = { ...rest, tools: covered, ...(Object.keys(compensations).length > 0 ? { compensations } : {}) };
  const narrowed: ReconciliationAdapter = {
    declaration: JSON.parse(JSON.stringify(declaration)) as typeof adapter.declaration,
    lookup: (request: LookupRequest, context: LookupContext) => adapter.lookup(request, context),
    ...(adapter.planCompensation ? { planCompensation: adapter.planCompensation.bind(adapter) } : {}),
  };
  return { adapter: Object.freeze(narrowed), coverage: { covered, notCovered: declared.filter((t) => !tools.includes(t)) } };
}
