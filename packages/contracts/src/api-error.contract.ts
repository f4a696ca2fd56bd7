// The body of every API error answer: `{error: {code, message, details?}}`.
import { z } from "zod";

/**
 * The body of every 4xx/5xx answer of the API: `{error: {code, message, details?}}`.
 * `code` is a stable dotted string (docs/DESIGN.md §9), e.g. `request.invalid`, `auth.invalid_token`,
 * `run.not_active`, `effect.fence_retained`, `driver.connection_superseded`.
 */
export const ApiErrorBodySchema = z.object({
  error: z.object({
    code: z.string().min(1),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});
/** See {@link ApiErrorBodySchema}. */
export type ApiErrorBody = z.infer<typeof ApiErrorBodySchema>;
