// The registry of adapter factories: validates declarations, refuses duplicates, and instantiates adapters by id.
import { z } from "zod";
import {
  AdapterDeclarationSchema,
  type AdapterDeclaration,
  type CompensationPlanRequest,
  type LookupContext,
  type LookupRequest,
  type ReconciliationAdapter,
  type ReconciliationAdapterFactory,
} from "../author/adapter.contract.js";
import { summarizeError } from "./error-message.js";
import { ReconciliationError } from "./reconciliation-errors.js";

/**
 * The registry of reconciliation adapter factories (docs/DESIGN.md §4: "The registry maps adapter ids to
 * adapters ... Registration validates declarations and refuses duplicates"). The host registers
 * factories at boot, calls `close()` when it starts, then binds each MCP server of its config to
 * `instantiate(adapterId, options)`.
 */
export interface AdapterRegistry {
  /**
   * Registers a factory under `factory.declaration.id` and returns its validated, frozen declaration.
   * @throws ReconciliationError `registry.closed` after `close()`; `adapter.invalid_declaration`
   *   when the declaration fails `AdapterDeclarationSchema` or `create` is not a function;
   *   `adapter.duplicate_id` when the id is taken.
   */
  register(factory: ReconciliationAdapterFactory): AdapterDeclaration;
  /**
   * The registered factory for `adapterId` (its declaration is the validated, frozen copy).
   * @throws ReconciliationError `adapter.unknown_id`.
   */
  resolve(adapterId: string): ReconciliationAdapterFactory;
  /**
   * Builds an adapter from the factory `adapterId` with `options` (whatever the host's config holds
   * for it; `undefined` when none). Works before and after `close()`. The returned adapter has the
   * validated, frozen declaration and delegates `lookup` to the factory's adapter.
   * @throws ReconciliationError `adapter.unknown_id`; `adapter.invalid_options` when `create` throws
   *   (message: the zod issues for a `ZodError`, the error's one-line message otherwise; `cause`
   *   kept; a `ReconciliationError` thrown by `create` is rethrown as is);
   *   `adapter.invalid_declaration` when `create` returns something without a `lookup` function
   *   (or without `planCompensation` while declaring compensations),
   *   or whose declaration fails the schema, has another `id`/`version` than the factory's, or
   *   declares a tool the factory's declaration does not.
   */
  instantiate(adapterId: string, options?: unknown): ReconciliationAdapter;
  /** The registered declarations, in registration order. */
  list(): AdapterDeclaration[];
  /** Closes registration (idempotent). `resolve`, `instantiate` and `list` keep working. */
  close(): void;
  /** True once `close()` was called. */
  readonly isClosed: boolean;
}

/** Creates an empty, open {@link AdapterRegistry}. */
export function createAdapterRegistry(): AdapterRegistry {
  const factories = new Map<string, ReconciliationAdapterFactory>();
  let closed = false;

  function resolve(adapterId: string): ReconciliationAdapterFactory {
    const factory = typeof adapterId === "string" ? factories.get(adapterId) : undefined;
    if (!factory) {
      throw new ReconciliationError("adapter.unknown_id", `no reconciliation adapter is registered with id "${String(adapterId)}"`, {
        details: { adapterId: String(adapterId) },
      });
    }
    return factory;
  }

  return {
    register(factory: ReconciliationAdapterFactory): AdapterDeclaration {
      if (closed)
        throw new ReconciliationError("registry.closed", "the adapter registry is closed: register adapters before the host starts");
      const declaration = parseDeclaration(factory?.declaration, "adapter declaration");
      if (typeof factory.create !== "function") {
        throw new ReconciliationError(
          "adapter.invalid_declaration",
          `adapter factory "${declaration.id}" has no create(options) function`,
          {
            details: { adapterId: declaration.id },
          },
        );
      }
      if (factories.has(declaration.id)) {
        throw new ReconciliationError(
          "adapter.duplicate_id",
          `a reconciliation adapter with id "${declaration.id}" is already registered`,
          {
            details: { adapterId: declaration.id },
          },
        );
      }
      const create = factory.create.bind(factory);
      factories.set(declaration.id, Object.freeze({ declaration, create }));
      return declaration;
    },

    resolve,

    instantiate(adapterId: string, options?: unknown): ReconciliationAdapter {
      const factory = resolve(adapterId);
      const id = factory.declaration.id;
      let built: unknown;
      try {
        built = factory.create(options);
      } catch (error) {
        if (ReconciliationError.is(error)) throw error;
        throw new ReconciliationError(
          "adapter.invalid_options",
          `invalid options for reconciliation adapter "${id}": ${summarizeError(error)}`,
          {
            details: { adapterId: id },
            cause: error,
          },
        );
      }
      return checkBuiltAdapter(built, factory.declaration);
    },

    list(): AdapterDeclaration[] {
      return [...factories.values()].map((factory) => factory.declaration);
    },

    close(): void {
      closed = true;
    },

    get isClosed(): boolean {
      return closed;
    },
  };
}

/**
 * Wraps a ready-made adapter that takes no options as a factory: `create(undefined)` and
 * `create({})` return it; any other options are refused (a `ZodError`, hence
 * `adapter.invalid_options` from `instantiate`).
 */
export function adapterFactoryOf(adapter: ReconciliationAdapter): ReconciliationAdapterFactory {
  const NoOptionsSchema = z.strictObject({}).optional();
  return {
    declaration: adapter.declaration,
    create(options: unknown): ReconciliationAdapter {
      NoOptionsSchema.parse(options);
      return adapter;
    },
  };
}

function parseDeclaration(value: unknown, what: string): AdapterDeclaration {
  let parsed: ReturnType<typeof AdapterDeclarationSchema.safeParse>;
  try {
    parsed = AdapterDeclarationSchema.safeParse(value);
  } catch (error) {
    throw new ReconciliationError("adapter.invalid_declaration", `invalid ${what}: ${summarizeError(error)}`, { cause: error });
  }
  if (!parsed.success) {
    const id = typeof (value as { id?: unknown } | null)?.id === "string" ? (value as { id: string }).id : undefined;
    throw new ReconciliationError("adapter.invalid_declaration", `invalid ${what}: ${summarizeError(parsed.error)}`, {
      details: id === undefined ? {} : { adapterId: id },
      cause: parsed.error,
    });
  }
  return deepFreeze(parsed.data);
}

function checkBuiltAdapter(built: unknown, expected: AdapterDeclaration): ReconciliationAdapter {
  const id = expected.id;
  const fail = (message: string): never => {
    throw new ReconciliationError("adapter.invalid_declaration", `reconciliation adapter "${id}": ${message}`, {
      details: { adapterId: id },
    });
  };
  if (typeof built !== "object" || built === null) return fail("create(options) did not return an adapter object");
  const adapter = built as ReconciliationAdapter;
  if (typeof adapter.lookup !== "function") return fail("the adapter has no lookup(request, context) function");
  const declaration = parseDeclaration(adapter.declaration, `declaration of the adapter built by "${id}"`);
  if (declaration.id !== expected.id || declaration.version !== expected.version) {
    return fail(`the built adapter declares ${declaration.id}@${declaration.version}, the factory ${expected.id}@${expected.version}`);
  }
  const undeclared = declaration.tools.filter((tool) => !expected.tools.includes(tool));
  if (undeclared.length > 0) return fail(`the built adapter declares tools the factory does not: ${undeclared.join(", ")}`);
  const compensates = Object.keys(declaration.compensations ?? {}).length > 0;
  if (compensates && typeof adapter.planCompensation !== "function") {
    return fail("the adapter declares compensations but has no planCompensation(request, context) function");
  }
  return Object.freeze({
    declaration,
    lookup: (request: LookupRequest, context: LookupContext): Promise<unknown> => adapter.lookup(request, context),
    ...(compensates
      ? {
          planCompensation: (request: CompensationPlanRequest, context: LookupContext): Promise<unknown> =>
            adapter.planCompensation!(request, context),
        }
      : {}),
  });
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
