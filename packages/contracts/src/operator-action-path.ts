/** The URL path and CLI command of an operator action, from its name; zod-free, so the browser console imports it as a value. */

/** `S` in kebab-case: each capital letter becomes `-` and its lower case (`retryLookup` → `retry-lookup`). */
export type KebabCase<S extends string> = S extends `${infer C}${infer Rest}`
  ? `${C extends Lowercase<C> ? C : `-${Lowercase<C>}`}${KebabCase<Rest>}`
  : "";

/** The path template of operator action `N` under `Prefix` (hono syntax): `<Prefix>/effects/:effectId/<N in kebab-case>`. */
export type OperatorActionPath<Prefix extends string, N extends string> = `${Prefix}/effects/:effectId/${KebabCase<N>}`;

/** Operator action `name` in kebab-case (`retryLookup` → `retry-lookup`): the last segment of its path and the operator CLI's command. */
export function operatorActionSegment<const N extends string>(name: N): KebabCase<N> {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`) as KebabCase<N>;
}

/**
 * The path template of operator action `name` under `prefix` (`/api/operator`, `/console/api`):
 * `<prefix>/effects/:effectId/<name in kebab-case>`, e.g. `/api/operator/effects/:effectId/reconcile`.
 */
export function operatorActionPath<const Prefix extends string, const N extends string>(
  prefix: Prefix,
  name: N,
): OperatorActionPath<Prefix, N> {
  return `${prefix}/effects/:effectId/${operatorActionSegment(name)}`;
}
