import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import { AppError, validationError, type FieldIssue } from '@gatehook/core/errors';
import { findUnstorable } from '@gatehook/core/storable-json';
import type { Logger } from '@gatehook/core/logger';
import { within } from '@gatehook/core/readiness';
import type { Db, Prisma } from '@gatehook/db/client';
import { isDatabaseUnavailable } from '@gatehook/db/errors';
import type { DeliveryQueues } from './jobs';

/** Actions Gatehook records itself; the gateway may not send them (webhook.test is never stored at all). */
const OWN_ACTIONS = /^(webhook|rate_limit_rule)\.|^rate_limit\.exceeded$/;

const text = (max: number) => z.string().max(max, `at most ${max} characters`);

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
  context: z.record(z.string().max(200), z.json()).default({}),
  changes: z.array(z.json()).max(1000).default([]),
  payload: z.record(z.string().max(200), z.json()).default({}),
  created_at: z.iso
    .datetime({ offset: true, message: 'created_at must be an ISO 8601 date-time' })
    // Postgres stores years 4713 BC to 294276 AD, and no year 0; ISO 8601's four-digit years past 0 all fit.
    .refine((at) => new Date(at).getUTCFullYear() >= 1, 'created_at must be in year 1 or later')
    .optional(),
});
export type AuditEventInput = z.input<typeof auditEventInputSchema>;

export interface IngestDeps {
  db: Db;
  /** When absent (or Redis is down), the worker's reconciler fans the events out within ~10 s. */
  queues?: DeliveryQueues | undefined;
  logger?: Logger | undefined;
}

export interface IngestResult {
  accepted: number;
  ids: string[];
}

/** Validates raw events, naming each issue `events.<n>.<field>` (or `<field>` for a single event). */
export function parseAuditEvents(orgId: string, raw: readonly unknown[], single: boolean): z.output<typeof auditEventInputSchema>[] {
  const issues: FieldIssue[] = [];
  const parsed = raw.map((item, index) => {
    const prefix = single ? '' : `events.${index}.`;
    // In-process callers skip the API's body check: strings Postgres cannot store are refused here too.
    const unstorable = findUnstorable(item);
    if (unstorable) {
      issues.push({ path: `${prefix}${unstorable.path}`.replace(/\.$/, ''), message: unstorable.message });
      return null;
    }
    const result = auditEventInputSchema.safeParse(item);
    if (!result.success) {
      for (const issue of result.error.issues) {
        if (issue.code === 'unrecognized_keys') {
          for (const key of issue.keys) issues.push({ path: `${prefix}${key}`, message: 'unknown field' });
        } else {
          issues.push({ path: `${prefix}${issue.path.join('.')}`.replace(/\.$/, ''), message: issue.message });
        }
      }
      return null;
    }
    if (result.data.org_id !== undefined && result.data.org_id !== orgId) {
      issues.push({ path: `${prefix}org_id`, message: "org_id must be the API key's organisation" });
    }
    return result.data;
  });
  if (issues.length > 0) throw validationError(issues);
  return parsed as z.output<typeof auditEventInputSchema>[];
}

/**
 * Durably records audit events and hands them to fan-out (a transactional outbox). When this resolves, every
 * event is committed in Postgres; enqueueing happens after the commit and may fail without losing anything,
 * because the worker's reconciler re-enqueues committed events that were not fanned out. Idempotent on `id`.
 */
export async function ingestAuditEvents(
  deps: IngestDeps,
  orgId: string,
  events: readonly AuditEventInput[],
  options: { single?: boolean } = {},
): Promise<IngestResult> {
  const parsed = parseAuditEvents(orgId, events, options.single ?? false);
  const receivedAt = new Date();
  const ids: string[] = [];
  const rows = new Map<string, Prisma.AuditEventCreateManyInput>();
  for (const event of parsed) {
    const id = event.id ?? uuidv7();
    ids.push(id);
    if (rows.has(id)) continue;
    rows.set(id, {
      orgId,
      id,
      action: event.action,
      actorType: event.actor_type,
      actorId: event.actor_id,
      actorDisplayName: event.actor_display_name,
      resourceType: event.resource_type,
      resourceId: event.resource_id,
      resourceDisplayName: event.resource_display_name,
      resources: event.resources,
      context: event.context as Prisma.InputJsonObject,
      changes: event.changes as Prisma.InputJsonArray,
      payload: event.payload as Prisma.InputJsonObject,
      createdAt: event.created_at ? new Date(event.created_at) : receivedAt,
      receivedAt,
    });
  }

  let created: { id: string }[];
  try {
    created = await deps.db.auditEvent.createManyAndReturn({ data: [...rows.values()], skipDuplicates: true, select: { id: true } });
  } catch (error) {
    if (isDatabaseUnavailable(error)) {
      throw new AppError('unavailable', 'The event store is unavailable; nothing was recorded. Retry later.', undefined, { 'retry-after': '5' });
    }
    throw error;
  }

  if (created.length > 0 && deps.queues) {
    try {
      await within(deps.queues.fanout(orgId, created.map((c) => c.id)), 2000);
    } catch (error) {
      deps.logger?.warn({ err: (error as Error).message, events: created.length }, 'fan-out enqueue failed; the reconciler will pick the events up');
    }
  }
  return { accepted: ids.length, ids };
}
