import type { Logger } from '@gatehook/core/logger';
import type { RedisConnection } from '@gatehook/core/redis';
import type { Db } from '@gatehook/db/client';
import { QUEUED_STATUSES } from '@gatehook/db/delivery/status';
import type { DeliveryQueues } from '@gatehook/delivery';
import { overdueTasks } from '@gatehook/db/webhook-tasks';

export interface ReconcilerDeps {
  db: Db;
  queues: DeliveryQueues;
  /** RECONCILE_INTERVAL_MS: a pass runs once per interval across all workers (apps/worker/src/periodic.ts). */
  intervalMs: number;
  batchLingerMs: number;
  logger: Logger;
  onReenqueued?: (kind: 'events' | 'deliveries' | 'batches', count: number) => void;
  /** How long committed work may wait before it counts as lost (CONTRACT 6: 10 s and 30 s; tests shorten them). */
  grace?: { eventsMs: number; deliveriesMs: number };
  /** Where the sweep over overdue deliveries stands, kept across passes ({@link SharedOverdueSweep} in a worker). */
  sweep?: OverdueSweep;
}

const DEFAULT_GRACE = { eventsMs: 10_000, deliveriesMs: 30_000 };
const LIMIT = 5000;
/** Overdue tasks re-enqueued per pass at most. */
const TASK_LIMIT = 1000;

/** Where a sweep over the overdue deliveries stands: after this (next_retry_at, id), or at the start. */
export type SweepPlace = { at: Date; id: string } | null;

/**
 * A sweep over the overdue deliveries of every organisation, one page of LIMIT per pass in (next_retry_at, id)
 * order, each pass starting after the last row the previous one read and the sweep starting over once a page comes
 * back short. However many deliveries one organisation has overdue, every other organisation's are read within one
 * sweep (overdue / LIMIT passes), never starved by the same oldest rows read in every pass. This one keeps its place
 * in the process; {@link SharedOverdueSweep} keeps it in Redis for every worker.
 */
export class OverdueSweep {
  private place: SweepPlace = null;

  async read(): Promise<SweepPlace> {
    return this.place;
  }

  async write(place: SweepPlace): Promise<void> {
    this.place = place;
  }
}

/** How long a sweep's place is kept without a pass (many reconcile intervals). */
const SWEEP_PLACE_TTL_MS = 3_600_000;

/**
 * {@link OverdueSweep} with its place in Redis (`<prefix>:reconciler:overdue-sweep`), so that the pass of whichever
 * worker runs it goes on where the last one stopped. A place not written for SWEEP_PLACE_TTL_MS is forgotten (the
 * sweep starts over); Redis unreachable, the pass starts at the beginning, as one did before there was a sweep.
 */
export class SharedOverdueSweep extends OverdueSweep {
  constructor(
    private readonly redis: RedisConnection,
    private readonly prefix: string,
  ) {
    super();
  }

  private get key(): string {
    return `${this.prefix}:reconciler:overdue-sweep`;
  }

  override async read(): Promise<SweepPlace> {
    const text = await this.redis.get(this.key).catch(() => null);
    const [at, id] = text?.split(' ') ?? [];
    return at && id && Number.isFinite(Number(at)) ? { at: new Date(Number(at)), id } : null;
  }

  override async write(place: SweepPlace): Promise<void> {
    const write = place
      ? this.redis.set(this.key, `${place.at.getTime()} ${place.id}`, 'PX', SWEEP_PLACE_TTL_MS)
      : this.redis.del(this.key);
    await write.catch(() => undefined);
  }
}

/**
 * One reconciler pass: puts back on the queues whatever Postgres says is due but Redis may have lost (a Redis
 * restarted empty, a worker killed mid-job, an API that died between commit and enqueue). Events committed more
 * than 10 s ago and not fanned out (parked ones excepted); deliveries pending or retrying whose next attempt is
 * more than 30 s overdue, not leased and with no waiting job alive (a page of an {@link OverdueSweep} per pass);
 * batch items older than the linger plus 10 s. The counts are of what it put back. Everything downstream is
 * idempotent, so a re-enqueue of work that was not lost costs a query and nothing else.
 */
export async function reconcileOnce(
  deps: ReconcilerDeps,
): Promise<{ events: number; deliveries: number; batches: number }> {
  const now = Date.now();
  const grace = deps.grace ?? DEFAULT_GRACE;
  // A new job id each interval: a copy of a lost job must not be deduplicated against a failed one left in Redis.
  const round = `r${Math.floor(now / deps.intervalMs)}`;

  const events = await deps.db.pendingFanout.findMany({
    where: { receivedAt: { lt: new Date(now - grace.eventsMs) }, parkedAt: null },
    select: { orgId: true, eventId: true, attempts: true },
    orderBy: { receivedAt: 'asc' },
    take: LIMIT,
  });
  // Events whose earlier runs did not complete go one per job: one that kills the worker running it takes no other
  // event with it, and its count reaches the parking limit alone (packages/delivery/src/pipeline/fanout-guard.ts).
  const byOrg = new Map<string, { fresh: string[]; alone: string[] }>();
  for (const e of events) {
    let ids = byOrg.get(e.orgId);
    if (!ids) byOrg.set(e.orgId, (ids = { fresh: [], alone: [] }));
    (e.attempts > 0 ? ids.alone : ids.fresh).push(e.eventId);
  }
  for (const [orgId, { fresh, alone }] of byOrg) {
    await deps.queues.fanout(orgId, fresh, { recovered: true });
    await deps.queues.fanout(orgId, alone, { recovered: true, chunk: 1 });
  }

  const sweep = deps.sweep ?? new OverdueSweep();
  const after = await sweep.read();
  const deliveries = await deps.db.delivery.findMany({
    where: {
      status: { in: [...QUEUED_STATUSES] },
      nextRetryAt: { lt: new Date(now - grace.deliveriesMs) },
      AND: [
        { OR: [{ leasedUntil: null }, { leasedUntil: { lt: new Date(now) } }] },
        ...(after
          ? [{ OR: [{ nextRetryAt: { gt: after.at } }, { nextRetryAt: after.at, id: { gt: after.id } }] }]
          : []),
      ],
    },
    select: { id: true, orgId: true, nextRetryAt: true },
    orderBy: [{ nextRetryAt: 'asc' }, { id: 'asc' }],
    take: LIMIT,
  });
  const last = deliveries.at(-1);
  await sweep.write(deliveries.length === LIMIT && last ? { at: last.nextRetryAt!, id: last.id } : null);
  // Under each delivery's one waiting job: a delivery still waiting on a busy webhook (its job alive, its
  // next_retry_at old) is neither given a second job nor counted, however many passes see it overdue.
  const reenqueued = await deps.queues.deliverLost(deliveries.map((d) => ({ id: d.id, orgId: d.orgId })));

  const batches = await deps.db.batchItem.findMany({
    where: { createdAt: { lt: new Date(now - deps.batchLingerMs - grace.eventsMs) } },
    distinct: ['webhookId'],
    select: { webhookId: true },
    take: LIMIT,
  });
  for (const b of batches) await deps.queues.flushBatch(b.webhookId, 0, round);
  await reconcileTasks(deps, now, round, grace.eventsMs);

  const counts = { events: events.length, deliveries: reenqueued, batches: batches.length };
  if (counts.events) deps.onReenqueued?.('events', counts.events);
  if (counts.deliveries) deps.onReenqueued?.('deliveries', counts.deliveries);
  if (counts.batches) deps.onReenqueued?.('batches', counts.batches);
  if (counts.events || counts.deliveries || counts.batches) deps.logger.info(counts, 'reconciler re-enqueued work');
  return counts;
}

/**
 * The reconciler's share for tasks: re-enqueues the step of every running task that is overdue by more than the
 * grace and not leased (its job was lost with Redis, or its worker died and the lease expired), so any worker
 * continues it from its cursor. Returns how many were re-enqueued.
 */
export async function reconcileTasks(
  deps: { db: Db; queues: DeliveryQueues; logger?: Logger },
  now: number,
  round: string,
  graceMs: number,
): Promise<number> {
  const ids = await overdueTasks(deps.db, new Date(now), graceMs, TASK_LIMIT);
  for (const id of ids) await deps.queues.taskStep(id, new Date(now), round);
  if (ids.length > 0) deps.logger?.info({ tasks: ids.length }, 'reconciler re-enqueued task steps');
  return ids.length;
}
