import { publishInvalidation } from '@gatehook/cache/invalidation';
import type { Logger } from '@gatehook/core/logger';
import { recordAuditEvent, type OwnAuditEvent } from '@gatehook/db/audit-events';
import type { Db, Prisma } from '@gatehook/db/client';
import type { DeliveryQueues } from '@gatehook/delivery';
import { WEBHOOKS_TOPIC } from '@gatehook/delivery/webhook-configs';
import type { RedisConnection } from '@gatehook/core/redis';

/** What the API does once a change it made has committed. Neither hook ever fails the request. */
export interface CommitHooks {
  /** Every process drops its cached copy of the organisation's webhooks (Redis pub/sub). */
  webhooksChanged(orgId: string): Promise<void>;
  /** Audit events the service recorded itself go to fan-out at once; the worker's reconciler is the backstop. */
  eventsRecorded(orgId: string, ids: readonly string[]): Promise<void>;
}

export function commitHooks(deps: {
  redis: RedisConnection;
  prefix: string;
  queues?: DeliveryQueues | undefined;
  logger?: Logger;
}): CommitHooks {
  const warn = (what: string) => (error: unknown) =>
    deps.logger?.warn(
      { err: (error as Error).message },
      `${what} failed after commit; caches expire and the reconciler catches up`,
    );
  return {
    webhooksChanged: (orgId) =>
      publishInvalidation(deps.redis, deps.prefix, WEBHOOKS_TOPIC, [orgId]).catch(warn('webhook invalidation')),
    eventsRecorded: async (orgId, ids) => {
      if (deps.queues && ids.length > 0) await deps.queues.fanout(orgId, ids).catch(warn('fan-out enqueue'));
    },
  };
}

/** Records an audit event in the transaction and remembers its id for the after-commit fan-out. */
export type RecordEvent = (input: OwnAuditEvent) => Promise<string>;

/**
 * Runs a change and the audit events that record it in one transaction; once it commits, hands the events to
 * fan-out and, when `webhooks` is set, announces the organisation's webhook change to every process.
 */
export async function auditedChange<T>(
  deps: { db: Db; hooks?: CommitHooks | undefined },
  orgId: string,
  options: { webhooks: boolean },
  change: (tx: Prisma.TransactionClient, record: RecordEvent) => Promise<T>,
): Promise<T> {
  const recorded: string[] = [];
  const result = await deps.db.$transaction(async (tx) => {
    recorded.length = 0; // a retried transaction starts over
    return change(tx, async (input) => {
      const id = await recordAuditEvent(tx, input);
      recorded.push(id);
      return id;
    });
  });
  if (deps.hooks) {
    if (options.webhooks) await deps.hooks.webhooksChanged(orgId);
    await deps.hooks.eventsRecorded(orgId, recorded);
  }
  return result;
}
