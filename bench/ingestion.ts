// Ingestion alone: POST /audit-events for an organisation with no webhook (the worker still fans every event
// out, to nobody), driven by bench/http-load.ts in a process of its own so the load never shares an event loop
// with the API. Shapes, as gateways send them:
//  - 100-event requests from 8 clients whose events carry ids the client chose (fresh for each request, as a gateway
//    that retries with its own ids sends them, and as ../shared/perf sends them): events/s and p99, next to the same
//    multi-row INSERT (the outbox's own statement, packages/db/src/outbox.ts) issued straight to Postgres by 2
//    callers (the API's group commit keeps 2 statements in flight; more concurrent inserters slow each other down on
//    a small machine), without HTTP, auth or validation: the storage floor of the same work;
//  - the same requests without ids (the API generates them, and looks for none in the stored partitions), named so;
//  - single-event requests from 32 clients: requests/s and p99, next to GET /healthz from 32 clients;
//  - the first shape again once the database holds a month of history (30 past day partitions of HISTORY_EVENTS
//    events each, as the default retention keeps): a random chosen id is looked for in every partition
//    (docs/database.md, "Idempotent ingestion across partitions"), so this is what a deployment a month old gets;
//    and the same with UUIDv7 ids, looked for only in the partitions from their own instant less a day on.
import { randomUUID } from 'node:crypto';
import { createDb, sqlPool } from '@gatehook/db/client';
import { insertAuditEvents, type OutboxEvent } from '@gatehook/db/outbox';
import { ensurePartitions } from '@gatehook/db/partitions';
import { EVENT, figure, ms, withRig } from './delivery';
import type { Figure } from './measure';
import { load } from './ratelimit';

const BATCH = 100;
const BATCH_CLIENTS = 8;
/**
 * Concurrent INSERTs of the reference: the API's group commit has at most 2 in flight
 * (packages/delivery/src/ingest.ts).
 */
const INSERT_CALLERS = 2;
const SINGLE_CLIENTS = 32;
/** Past day partitions of the month of history, and the events each holds (under organisations of their own). */
const HISTORY_DAYS = 30;
const HISTORY_EVENTS = 100_000;
const DAY_MS = 86_400_000;
/** Replaced by the load generator with a fresh UUID in each request (bench/http-load.ts). */
const FRESH_ID = 'FRESH-ID';

/** Fills the 30 days before today with partitions of HISTORY_EVENTS events each, as a month of retention holds. */
async function addMonthOfHistory(databaseUrl: string): Promise<void> {
  const db = createDb(databaseUrl, { poolSize: 1 });
  const pool = sqlPool(db);
  try {
    const start = new Date(Date.now() - HISTORY_DAYS * DAY_MS);
    // Null while the worker's own upkeep holds the lock: the partitions are made once it lets go.
    await waitUntilAsync(
      async () => (await ensurePartitions(pool, start, { width: 'day', aheadMs: HISTORY_DAYS * DAY_MS })) !== null,
      10_000,
      'the partition upkeep lock free',
    );
    await pool.query(
      `INSERT INTO audit_events (org_id, id, action, actor_type, created_at, received_at)
       SELECT ('00000000-0000-4000-8000-' || lpad((g % 50)::text, 12, '0'))::uuid, gen_random_uuid(), 'tag.created',
         'user', t, t
       FROM generate_series(0, $1::int * $2::int - 1) AS g,
         LATERAL (SELECT date_trunc('day', now()) - (1 + g % $1::int) * interval '1 day' + (g / $1::int % 86400) * interval '1 second' AS t) AS at`,
      [HISTORY_DAYS, HISTORY_EVENTS],
    );
    await pool.query('ANALYZE audit_events');
  } finally {
    await db.$disconnect();
  }
}

async function waitUntilAsync(done: () => Promise<boolean>, timeoutMs: number, what = 'drained'): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`not ${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Events/s of INSERT_CALLERS callers each inserting BATCH fresh events per statement, back to back. */
async function bareInsertRate(databaseUrl: string, orgId: string, seconds: number): Promise<number> {
  const db = createDb(databaseUrl, { poolSize: INSERT_CALLERS });
  const pool = sqlPool(db);
  try {
    const batch = (): OutboxEvent[] => {
      const receivedAt = new Date();
      return Array.from({ length: BATCH }, () => ({
        receivedAt,
        data: { ...EVENT, id: randomUUID(), org_id: orgId, created_at: receivedAt.toISOString() },
      }));
    };
    const run = async (ms: number) => {
      let events = 0;
      const until = performance.now() + ms;
      await Promise.all(
        Array.from({ length: INSERT_CALLERS }, async () => {
          while (performance.now() < until) events += (await insertAuditEvents(pool, batch())).length;
        }),
      );
      return events;
    };
    await run(1000);
    const started = performance.now();
    const events = await run(seconds * 1000);
    return Math.round((events / (performance.now() - started)) * 1000);
  } finally {
    await db.$disconnect();
  }
}

export async function ingestionFigures(seconds: number): Promise<Figure[]> {
  return withRig(async (rig) => {
    await rig.startWorker();
    const org = await rig.org();
    const headers = { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' };
    const body = (count: number, event: object = EVENT) =>
      JSON.stringify({ events: Array.from({ length: count }, () => event) });
    const spec = {
      url: `${rig.api}/audit-events`,
      method: 'POST',
      headers,
      mode: 'closed',
      seconds,
      warmupSeconds: 1,
      expectStatus: 202,
    };

    // Each phase starts once the worker has fanned out everything before it, so that it measures itself alone.
    const drained = () => waitUntilAsync(async () => (await rig.db.pendingFanout.count()) === 0, 120_000);
    // 100-event requests from BATCH_CLIENTS clients, every event with a fresh id of the client's.
    const withChosenIds = (freshIdVersion: 4 | 7 = 4) =>
      load({
        ...spec,
        bodies: [body(BATCH, { id: FRESH_ID, ...EVENT })],
        freshIdToken: FRESH_ID,
        freshIdVersion,
        concurrency: BATCH_CLIENTS,
      });
    const batched = await withChosenIds();
    await drained();
    const generated = await load({ ...spec, bodies: [body(BATCH)], concurrency: BATCH_CLIENTS });
    await drained();
    // The reference's rows go in under an organisation of their own and are marked fanned out at once: they are
    // not the worker's work.
    const bareOrg = randomUUID();
    const bare = await bareInsertRate(rig.databaseUrl, bareOrg, seconds);
    await rig.db.pendingFanout.deleteMany({ where: { orgId: bareOrg } });
    await drained();
    const single = await load({ ...spec, bodies: [body(1)], concurrency: SINGLE_CLIENTS, warmupSeconds: 2 });
    await drained();
    const health = await load({
      url: `${rig.api}/healthz`,
      method: 'GET',
      headers: {},
      mode: 'closed',
      concurrency: SINGLE_CLIENTS,
      seconds,
      warmupSeconds: 1,
    });
    await addMonthOfHistory(rig.databaseUrl);
    const aged = await withChosenIds();
    await drained();
    const agedV7 = await withChosenIds(7);
    await drained();

    return [
      figure(
        `ingestion events/s, ${BATCH}-event POST /audit-events from ${BATCH_CLIENTS} clients, ids chosen by the client, no webhook (bar: 20,000)`,
        batched.perSecond * BATCH,
        'events/s',
        `the outbox's multi-row INSERT of ${BATCH} events straight to Postgres from ${INSERT_CALLERS} callers`,
        bare,
      ),
      figure(
        `ingestion events/s, the same requests without ids (the service generates them)`,
        generated.perSecond * BATCH,
        'events/s',
        'the same requests with ids chosen by the client',
        batched.perSecond * BATCH,
      ),
      figure(
        `ingestion events/s, the same requests with ids chosen by the client, on a month of history (${HISTORY_DAYS} day partitions of ${HISTORY_EVENTS.toLocaleString('en-US')} events)`,
        aged.perSecond * BATCH,
        'events/s',
        'the same requests on the fresh database',
        batched.perSecond * BATCH,
      ),
      figure(
        `ingestion events/s, the same requests with UUIDv7 ids chosen by the client, on the month of history`,
        agedV7.perSecond * BATCH,
        'events/s',
        'the same requests on the fresh database (random ids)',
        batched.perSecond * BATCH,
      ),
      figure(
        `ingestion p99, ${BATCH}-event requests from ${BATCH_CLIENTS} clients (lower is better)`,
        batched.latenciesMs.p99,
        'ms',
        'p50 of the same requests',
        batched.latenciesMs.p50,
      ),
      figure(
        `ingestion single-event requests/s from ${SINGLE_CLIENTS} clients, no webhook (bar: 3,000)`,
        single.perSecond,
        'requests/s',
        `GET /healthz from ${SINGLE_CLIENTS} clients, same process`,
        health.perSecond,
      ),
      figure(
        `ingestion p99, single-event requests from ${SINGLE_CLIENTS} clients (lower is better)`,
        ms(single.latenciesMs.p99),
        'ms',
        `GET /healthz p99 from ${SINGLE_CLIENTS} clients`,
        ms(health.latenciesMs.p99),
      ),
    ];
  });
}
