// Recover pacing (CONTRACT 11, docs/recover-replay.md): another webhook's live latency while a large recovery
// runs, next to the same latency without it, and the recovery's own rate next to its cap. The recovering
// webhook's history is seeded straight into Postgres (RECOVER_EVENTS failed deliveries with stored bodies, as 8
// failed attempts would leave them), so the figure measures the recovery and not the outage.
// BENCH_RECOVER_EVENTS sets the size; BENCH_RECOVER_RATE sets the worker's TASK_SEND_RATE (default: the product's).
import { randomUUID } from 'node:crypto';
import type { AuditEventData } from '@gatehook/core/audit-event';
import { parseConfig } from '@gatehook/core/config';
import { SecretBox } from '@gatehook/core/encryption';
import { renderEnvelope } from '@gatehook/delivery/render/envelope';
import { sealBody } from '@gatehook/delivery/render/stored-body';
import {
  ACTION,
  arrivalLatencies,
  EVENT,
  figure,
  LIVE_RATE,
  ms,
  waitUntil,
  withRig,
  type CountingReceiver,
  type Org,
  type Rig,
} from './delivery';
import { percentile, type Figure } from './measure';

/** Failed deliveries the recovery re-sends (the bar: 10,000). */
const RECOVER_EVENTS = Number(process.env.BENCH_RECOVER_EVENTS ?? 10_000);
const SEED_CHUNK = 1000;
/** The recovery's send cap: the product's default unless the bench is told otherwise. */
const SEND_RATE = Number(process.env.BENCH_RECOVER_RATE ?? parseConfig({ NODE_ENV: 'test' }).TASK_SEND_RATE);

/** Seeds `count` failed, retryable deliveries of one event each for `webhookId`, created a minute ago. */
async function seedFailedDeliveries(rig: Rig, orgId: string, webhookId: string, count: number): Promise<void> {
  const box = new SecretBox(rig.encryptionKey);
  const createdAt = new Date(Date.now() - 60_000);
  for (let done = 0; done < count; done += SEED_CHUNK) {
    const rows = Array.from({ length: Math.min(SEED_CHUNK, count - done) }, () => {
      const eventId = randomUUID();
      const event: AuditEventData = { ...EVENT, id: eventId, org_id: orgId, created_at: createdAt.toISOString() };
      const body = renderEnvelope(event);
      const id = randomUUID();
      return {
        id,
        orgId,
        webhookId,
        status: 'failed' as const,
        eventIds: [eventId],
        eventCount: 1,
        bodyEncrypted: sealBody(box, body, id, { varNames: [] }),
        contentType: 'application/json',
        error: 'attempts_exhausted',
        attemptCount: 8,
        cycleAttempts: 8,
        createdAt,
      };
    });
    await rig.db.delivery.createMany({ data: rows });
  }
}

/**
 * Ingests one live event. A keep-alive connection that the API closed just as it was reused fails the request
 * (ECONNRESET): that one is sent again rather than ending the bench, and its latency still counts from the first try.
 */
function liveEvent(org: Org): () => Promise<string[]> {
  return () =>
    org
      .ingest(1)
      .catch((error: unknown) =>
        (error as { code?: string }).code === 'ECONNRESET' ? org.ingest(1) : Promise.reject(error),
      );
}

async function startRecovery(rig: Rig, key: string, webhookId: string): Promise<string> {
  const response = await fetch(`${rig.api}/webhooks/${webhookId}/recover`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ since: new Date(Date.now() - 3_600_000).toISOString() }),
  });
  if (response.status !== 202) throw new Error(`recover: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

/** The recovery figures; one stack, torn down at the end whatever happens. */
export async function recoverFigures(seconds: number): Promise<Figure[]> {
  return withRig(async (rig) => {
    await rig.startWorker({ TASK_SEND_RATE: String(SEND_RATE) });
    // Live traffic: its own organisation and webhook, ingested at a fixed rate.
    const live = await rig.org();
    const liveReceiver = await rig.receiver();
    await live.webhook(liveReceiver.url('/live'));
    const without = await arrivalLatencies([liveReceiver], LIVE_RATE, seconds, liveEvent(live));

    // The recovering webhook: another organisation, RECOVER_EVENTS failed deliveries, a receiver back up.
    const broken = await rig.org();
    const recovered: CountingReceiver = await rig.receiver();
    const hook = await broken.webhook(recovered.url('/recovered'), { events: [ACTION] });
    await seedFailedDeliveries(rig, broken.orgId, hook.id, RECOVER_EVENTS);
    // A capped recovery cannot be quicker than its cap allows: give it three times that, and ten minutes at least.
    const deadlineMs = Math.max(600_000, SEND_RATE > 0 ? (3 * RECOVER_EVENTS * 1000) / SEND_RATE : 0);
    const started = performance.now();
    await startRecovery(rig, broken.key, hook.id);
    // Live latency over the whole recovery, not a slice of it: windows of `seconds` until every delivery is back.
    const during: number[] = [];
    while (recovered.arrivals.size < RECOVER_EVENTS && performance.now() - started < deadlineMs) {
      during.push(...(await arrivalLatencies([liveReceiver], LIVE_RATE, seconds, liveEvent(live))));
    }
    during.sort((a, b) => a - b);
    const duringShare = Math.min(1, recovered.arrivals.size / RECOVER_EVENTS);
    await waitUntil(() => recovered.arrivals.size >= RECOVER_EVENTS, deadlineMs);
    const recoveryMs = performance.now() - started;

    return [
      {
        ...figure(
          `live webhook p99 at ${LIVE_RATE} events/s over another webhook's recovery of ${RECOVER_EVENTS.toLocaleString('en-US')} deliveries (TASK_SEND_RATE ${SEND_RATE || 'off'}; bar: 250 ms; lower is better)`,
          ms(percentile(during, 99)),
          'ms',
          'same live webhook p99 without a recovery, same run',
          ms(percentile(without, 99)),
        ),
        note: `${during.length.toLocaleString('en-US')} live events; ${Math.round(duringShare * 100)}% recovered when the measurement ended`,
      },
      SEND_RATE > 0
        ? figure(
            `recovery rate, ${RECOVER_EVENTS.toLocaleString('en-US')} failed deliveries re-sent (1 worker, live events at ${LIVE_RATE}/s meanwhile)`,
            Math.round((RECOVER_EVENTS / recoveryMs) * 1000),
            'deliveries/s',
            'its cap, TASK_SEND_RATE',
            SEND_RATE,
          )
        : figure(
            `recovery rate, ${RECOVER_EVENTS.toLocaleString('en-US')} failed deliveries re-sent (1 worker, no send cap: paced by TASK_MAX_BACKLOG only)`,
            Math.round((RECOVER_EVENTS / recoveryMs) * 1000),
            'deliveries/s',
            'live events/s fed meanwhile',
            LIVE_RATE,
          ),
    ];
  });
}
