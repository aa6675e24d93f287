import { v7 as uuidv7 } from 'uuid';
import { toAuditEventData } from '@gatehook/core/audit-event';
import { AppError } from '@gatehook/core/errors';
import type { Logger } from '@gatehook/core/logger';
import { annotateSpan, currentTraceparent } from '@gatehook/core/tracing';
import { sqlPool, type Db } from '@gatehook/db/client';
import { GroupCommit } from '@gatehook/core/group-commit';
import { insertAuditEvents, type OutboxEvent } from '@gatehook/db/outbox';
import { isDatabaseUnavailable } from '@gatehook/db/errors';
import { parseAuditEvents, type AuditEventInput } from './audit-event-input';
import type { DeliveryQueues } from './queues/producer';
import { MAX_EVENTS_PER_STATEMENT } from './tunables';

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

/** A request's events, and the trace their fan-out continues (the ingestion span's; absent when tracing is off). */
type OutboxWrite = { events: OutboxEvent[]; trace?: string | undefined };

// One group commit per process and queue producer: concurrent ingestions share one INSERT and one enqueue.
const outboxes = new WeakMap<object, GroupCommit<OutboxWrite, void>>();

function outboxOf(deps: IngestDeps): GroupCommit<OutboxWrite, void> {
  const key = deps.queues ?? deps.db;
  let outbox = outboxes.get(key);
  if (!outbox) {
    const pool = sqlPool(deps.db);
    outbox = GroupCommit.withoutResults(
      async (writes: OutboxWrite[]) => {
        const inserted = await insertAuditEvents(
          pool,
          writes.flatMap((w) => w.events),
        );
        if (inserted.length > 0 && deps.queues) {
          const traced = writes.some((w) => w.trace !== undefined)
            ? new Map(writes.flatMap((w) => w.events.map((e) => [`${e.data.org_id} ${e.data.id}`, w.trace] as const)))
            : null;
          // Enqueued after the commit, merged with other flushes' events, without holding the answers: the events
          // are committed, and the reconciler fans out whatever Redis does not take.
          deps.queues
            .fanoutMerged(traced ? inserted.map((e) => ({ ...e, trace: traced.get(`${e.orgId} ${e.id}`) })) : inserted)
            .catch((error: unknown) => {
              deps.logger?.warn(
                { err: (error as Error).message, events: inserted.length },
                'fan-out enqueue failed; the reconciler will pick the events up',
              );
            });
        }
      },
      // Keeps a statement's size bounded; two in flight let one commit while the next gathers.
      { maxBatch: 64, maxConcurrent: 2 },
    );
    outboxes.set(key, outbox);
  }
  return outbox;
}

/**
 * Durably records audit events and hands them to fan-out (a transactional outbox). When this resolves, every
 * event is committed in Postgres; enqueueing happens after the commit and may fail without losing anything,
 * because the worker's reconciler re-enqueues committed events that were not fanned out. Idempotent on `id`.
 * Concurrent calls are committed together (group commit): one multi-row statement and one enqueue for all.
 */
export async function ingestAuditEvents(
  deps: IngestDeps,
  orgId: string,
  events: readonly AuditEventInput[],
  options: { single?: boolean } = {},
): Promise<IngestResult> {
  const parsed = parseAuditEvents(orgId, events, options.single ?? false);
  const receivedAt = new Date();
  const receivedIso = receivedAt.toISOString();
  const ids: string[] = [];
  const rows = new Map<string, OutboxEvent>();
  for (const event of parsed) {
    // An id the client chose may have been stored before (idempotent ingestion); one generated here cannot.
    const generatedId = event.id === undefined;
    const id = event.id ?? uuidv7();
    ids.push(id);
    if (rows.has(id)) continue;
    rows.set(id, {
      receivedAt,
      generatedId,
      data: toAuditEventData(event, {
        id,
        org_id: orgId,
        created_at: event.created_at ? new Date(event.created_at).toISOString() : receivedIso,
      }),
    });
  }

  const outbox = outboxOf(deps);
  try {
    const all = [...rows.values()];
    const trace = currentTraceparent();
    for (let i = 0; i < all.length; i += MAX_EVENTS_PER_STATEMENT)
      await outbox.submit({ events: all.slice(i, i + MAX_EVENTS_PER_STATEMENT), trace });
  } catch (error) {
    if (isDatabaseUnavailable(error)) {
      throw new AppError(
        'unavailable',
        'The event store is unavailable; nothing was recorded. Retry later.',
        undefined,
        { 'retry-after': '5' },
      );
    }
    throw error;
  }
  annotateSpan({ 'gatehook.event.count': ids.length });
  return { accepted: ids.length, ids };
}
