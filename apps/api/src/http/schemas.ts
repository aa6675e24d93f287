import { z } from 'zod';

/** `{id}` path parameter: a malformed uuid is a 404 like an unknown one. */
export const idParams = z.object({ id: z.uuid() });

/** The error body of CONTRACT section 3, for the OpenAPI document. */
export const errorResponseSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});

/** Standard error responses of an authenticated route. */
export function errorResponses(...statuses: number[]): Record<number, { description: string; schema: z.ZodType }> {
  const descriptions: Record<number, string> = {
    400: 'Malformed request',
    401: 'Missing, unknown or revoked API key',
    403: 'The key lacks the permission or role',
    404: "Unknown id, or another organisation's resource",
    409: 'The resource is not in a state that allows this',
    413: 'Request body too large',
    422: 'A field rule is broken; details[].path names the field',
    429: 'Throttled; Retry-After says when to try again',
  };
  return Object.fromEntries(
    statuses.map((s) => [s, { description: descriptions[s] ?? 'Error', schema: errorResponseSchema }]),
  );
}
