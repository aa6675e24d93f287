// An audit event as the gateway sends it (SPEC 2.4 `data`, CONTRACT 6), and the one validation of an ingestion
// request: a single linear walk over every event checks what Postgres can store, the nesting depth and the
// value count of the whole request (findUnstorable), then zod checks each event's own fields. The JSON-valued
// fields (context, changes, payload) are left to the walk instead of z.json(), which would walk them again,
// recursively, per value.

import { z } from 'zod';
import { AppError, validationError, type FieldIssue } from '@gatehook/core/errors';
import { findUnstorable, MAX_JSON_DEPTH, MAX_JSON_NODES } from '@gatehook/core/storable-json';

/** Actions Gatehook records itself; the gateway may not send them (webhook.test is never stored at all). */
const OWN_ACTIONS = /^(webhook|rate_limit_rule)\.|^rate_limit\.exceeded$/;

/** Events in one ingestion request (CONTRACT 6). */
export const MAX_EVENTS_PER_REQUEST = 1000;

/** JSON values in one ingestion request, all events together (core's MAX_JSON_NODES). */
export const MAX_INGEST_NODES = MAX_JSON_NODES;

const text = (max: number) => z.string().max(max, `at most ${max} characters`);

// Any JSON value: the walk has already checked that it is one (and storable), so zod need not look inside.
const jsonValue = z.unknown().meta({ description: 'any JSON value' });

/** One audit event as the gateway sends it: SPEC 2.4 `data`, with `id` and `created_at` optional. */
export const auditEventInputSchema = z.strictObject({
  id: z.uuid('id must be a uuid').optional(),
  org_id: z.uuid('org_id must be a uuid').optional(),
  action: z
    .string()
    .regex(/^[a-z0-9_]+(\.[a-z0-9_]+)+$/, 'action must be dotted lowercase words, e.g. gateway.tool.error')
    .max(200)
    .refine((a) => !OWN_ACTIONS.test(a), 'this action is recorded by Gatehook itself and cannot be ingested'),
  actor_type: z.enum(['user', 'agent', 'system'], 'actor_type must be user, agent or system'),
  actor_id: text(1000).default(''),
  actor_display_name: text(1000).default(''),
  resource_type: text(1000).default(''),
  resource_id: text(1000).default(''),
  resource_display_name: text(1000).default(''),
  resources: z.record(z.string().max(200), text(4000)).default({}),
  context: z.record(z.string().max(200), jsonValue).default({}),
  changes: z.array(jsonValue).max(1000).default([]),
  payload: z.record(z.string().max(200), jsonValue).default({}),
  created_at: z.iso
    .datetime({ offset: true, message: 'created_at must be an ISO 8601 date-time' })
    // Postgres stores years 4713 BC to 294276 AD, and no year 0; ISO 8601's four-digit years past 0 all fit.
    .refine((at) => new Date(at).getUTCFullYear() >= 1, 'created_at must be in year 1 or later')
    .optional(),
});
export type AuditEventInput = z.input<typeof auditEventInputSchema>;
export type ParsedAuditEvent = z.output<typeof auditEventInputSchema>;

/**
 * Validates raw events, naming each issue `events.<n>.<field>` (or `<field>` for a single event). One walk over
 * the whole request; more than MAX_INGEST_NODES values in all is a 413 (payload_too_large) naming the place
 * where the count ran out, any other problem a 422 listing every issue.
 */
export function parseAuditEvents(orgId: string, raw: readonly unknown[], single: boolean): ParsedAuditEvent[] {
  const prefix = (index: number) => (single ? '' : `events.${index}.`);
  // The list itself is one level and one value more than the events: each event keeps the whole depth limit.
  const unstorable = findUnstorable(raw, { maxNodes: MAX_INGEST_NODES + 1, maxDepth: MAX_JSON_DEPTH + 1 });
  if (unstorable) {
    // The walk starts at the list of events: its first path segment is the event's index.
    const [index = '0', ...rest] = unstorable.path.split('.');
    const path = `${prefix(Number(index))}${rest.join('.')}`.replace(/\.$/, '');
    if (unstorable.tooLarge) {
      // The walk counted the list wrapper too: name the request's own limit, not the shifted budget.
      throw new AppError('payload_too_large', `The request has more than ${MAX_INGEST_NODES} JSON values`, [
        {
          path,
          message: `has more than ${MAX_INGEST_NODES} values (strings, numbers, arrays, objects) in all`,
        },
      ]);
    }
    throw validationError([{ path, message: unstorable.message }]);
  }
  const issues: FieldIssue[] = [];
  const parsed = raw.map((item, index) => {
    const result = auditEventInputSchema.safeParse(item);
    if (!result.success) {
      for (const issue of result.error.issues) {
        if (issue.code === 'unrecognized_keys') {
          for (const key of issue.keys) issues.push({ path: `${prefix(index)}${key}`, message: 'unknown field' });
        } else {
          issues.push({ path: `${prefix(index)}${issue.path.join('.')}`.replace(/\.$/, ''), message: issue.message });
        }
      }
      return null;
    }
    if (result.data.org_id !== undefined && result.data.org_id !== orgId) {
      issues.push({ path: `${prefix(index)}org_id`, message: "org_id must be the API key's organisation" });
    }
    return result.data;
  });
  if (issues.length > 0) throw validationError(issues);
  return parsed as ParsedAuditEvent[];
}
