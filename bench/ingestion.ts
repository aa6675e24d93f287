// Ingestion alone: POST /audit-events for an organisation with no webhook (the worker still fans every event
// out, to nobody), driven by bench/http-load.ts in a process of its own so the load never shares an event loop
// with the API. Two shapes, as a gateway sends them:
//  - 100-event requests from 8 clients: events/s and p99, next to the same multi-row INSERT (the outbox's own
//    statement, packages/db/src/outbox.ts) issued straight to Postgres by 2 callers (the API's group commit keeps
//    2 statements in flight; more concurrent inserters slow each other down on a small machine), without HTTP, auth
//    or validation: the storage floor of the same work;
//  - single-event requests from 32 clients: requests/s and p99, next to GET /healthz from 32 clients.
import { randomUUID } from 'node:crypto';
import { createDb, sqlPool } from '@gatehook/db/client';
import { insertAuditEvents, type OutboxEvent } from '@gatehook/db/outbox';
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

async function waitUntilAsync(done: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`not drained within ${timeoutMs} ms`);
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
    const body = (count: number) => JSON.stringify({ events: Array.from({ length: count }, () => EVENT) });
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
    const batched = await load({ ...spec, bodies: [body(BATCH)], concurrency: BATCH_CLIENTS });
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

    return [
      figure(
        `ingestion events/s, ${BATCH}-event POST /audit-events from ${BATCH_CLIENTS} clients, no webhook (bar: 20,000)`,
        batched.perSecond * BATCH,
        'events/s',
        `the outbox's multi-row INSERT of ${BATCH} events straight to Postgres from ${INSERT_CALLERS} callers`,
        bare,
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
