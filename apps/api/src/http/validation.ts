import type { Request } from 'express';
import type { z } from 'zod';
import { AppError, validationError, type FieldIssue } from '@gatehook/core/errors';
import { findUnstorable } from '@gatehook/core/storable-json';

/** Turns zod issues into `details[]`, one entry per field; unknown keys are named one by one. */
export function issuesToDetails(issues: readonly z.core.$ZodIssue[], prefix: (string | number)[] = []): FieldIssue[] {
  const details: FieldIssue[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) details.push({ path: [...path, key].join('.'), message: 'unknown field' });
    } else {
      details.push({ path: path.join('.'), message: issue.message });
    }
  }
  return details;
}

/** Path parameters: a malformed id is the same 404 as an unknown one (CONTRACT section 3). */
export function parseParams<T extends z.ZodType>(schema: T, params: unknown): z.output<T> {
  const result = schema.safeParse(params);
  if (!result.success) throw new AppError('not_found', 'No resource with that id');
  return result.data;
}

/** Query strings: an unknown value is a 400 naming the parameter. */
export function parseQuery<T extends z.ZodType>(schema: T, query: unknown): z.output<T> {
  const result = schema.safeParse(query);
  if (!result.success) {
    throw new AppError('bad_request', 'Invalid query parameter', issuesToDetails(result.error.issues));
  }
  return result.data;
}

/**
 * The JSON object body of a request, not yet walked: a missing body or one that is not an object is a 400. For
 * routes that validate the contents themselves in one walk (ingestion); every other route uses parseBody.
 */
export function objectBody(req: Request): Record<string, unknown> {
  const body: unknown = req.body;
  if (body === undefined) {
    const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
    throw new AppError(
      'bad_request',
      hasBody ? 'The request body must be sent as application/json' : 'A JSON body is required',
    );
  }
  return asObject(body);
}

/** A parsed JSON body that must be an object: anything else is a 400. */
export function asObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new AppError('bad_request', 'The request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/**
 * JSON bodies: not JSON or not an object is a 400; a field rule broken is a 422 with the field's path, and so is a
 * string Postgres cannot store (NUL, unpaired surrogates) or nesting past the depth limit, whatever the route.
 */
export function parseBody<T extends z.ZodType>(schema: T, req: Request): z.output<T> {
  return validateObject(schema, objectBody(req));
}

/** parseBody's checks on a body already parsed and known to be an object. */
export function validateObject<T extends z.ZodType>(schema: T, body: Record<string, unknown>): z.output<T> {
  const unstorable = findUnstorable(body);
  if (unstorable?.tooLarge)
    throw new AppError('payload_too_large', 'The request body has too many JSON values', [unstorable]);
  if (unstorable) throw validationError([unstorable]);
  const result = schema.safeParse(body);
  if (!result.success) throw validationError(issuesToDetails(result.error.issues));
  return result.data;
}
