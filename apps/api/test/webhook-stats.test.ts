import { randomUUID } from 'node:crypto';
import { sqlPool } from '@gatehook/db/client';
import { webhookAttemptStats, webhookDeliveryCounts } from '@gatehook/db/operator-view';
import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { WebhookStats } from '@gatehook/api/services/webhook-stats';

let api: TestApi;
let org: TestOrg;
beforeAll(async () => {
  api = await startTestApi({ queues: false });
  org = await createTestOrg(api.db);
});
afterAll(async () => {
  await api.close();
});

const HOUR = 3_600_000;

async function createWebhook(): Promise<string> {
  const r = await api.call('POST', '/webhooks', {
    key: org.admin,
    body: { name: 'stats', url: 'https://93.184.215.14/hook', events: ['*'] },
  });
  expect(r.status).toBe(201);
  return r.body.id;
}

/**
 * A delivery created at `createdAt` in `status`, with attempts of the given durations: the first then, each next an
 * hour later.
 */
async function delivery(
  webhookId: string,
  createdAt: Date,
  status: 'pending' | 'retrying' | 'succeeded' | 'failed',
  durations: number[],
) {
  const id = randomUUID();
  await api.db.delivery.create({
    data: {
      id,
      orgId: org.orgId,
      webhookId,
      status,
      eventIds: [randomUUID()],
      eventCount: 1,
      bodyEncrypted: 'x',
      createdAt,
      attemptCount: durations.length,
    },
  });
  for (const [i, durationMs] of durations.entries()) {
    await api.db.deliveryAttempt.create({
      data: { deliveryId: id, webhookId, at: new Date(createdAt.getTime() + i * HOUR), statusCode: 200, durationMs },
    });
  }
}

describe('GET /webhooks/{id}/stats', () => {
  it('counts the deliveries created in each hour with their outcome now, and the attempts made in each hour with their p50 and p99', async () => {
    const webhookId = await createWebhook();
    const thisHour = Math.floor(Date.now() / HOUR) * HOUR;
    const at = (hoursAgo: number, minutes: number) => new Date(thisHour - hoursAgo * HOUR + minutes * 60_000);
    // Two hours ago: 3 deliveries; their attempts fall in the hours they were made (one an hour, see delivery()).
    await delivery(webhookId, at(2, 0), 'succeeded', [10]);
    await delivery(webhookId, at(2, 30), 'failed', [20, 30, 40]);
    await delivery(webhookId, at(2, 59), 'retrying', [50, 60]);
    // This hour: 2 deliveries, one not attempted yet.
    await delivery(webhookId, at(0, 0), 'succeeded', [100]);
    await delivery(webhookId, new Date(Date.now() - 1), 'pending', []);
    // Outside the 24 hours: not counted.
    await delivery(webhookId, at(24, 0), 'succeeded', [1000]);
    // Another webhook's deliveries: not counted.
    await delivery(await createWebhook(), at(2, 10), 'succeeded', [5]);

    const r = await api.call('GET', `/webhooks/${webhookId}/stats`, { key: org.member });
    expect(r.status).toBe(200);
    const buckets = r.body.buckets;
    expect(buckets).toHaveLength(24);
    expect(buckets.map((b: { start: string }) => b.start)).toEqual(
      Array.from({ length: 24 }, (_, i) => new Date(thisHour - (23 - i) * HOUR).toISOString()),
    );
    // Attempts by hour: 2 h ago 10, 20, 50; 1 h ago 30, 60; this hour 40, 100. Percentiles interpolate
    // (percentile_cont).
    expect(buckets[21]).toEqual({
      start: at(2, 0).toISOString(),
      deliveries: 3,
      succeeded: 1,
      failed: 1,
      attempts: 3,
      p50_ms: 20,
      p99_ms: 49,
    });
    expect(buckets[22]).toEqual({
      start: at(1, 0).toISOString(),
      deliveries: 0,
      succeeded: 0,
      failed: 0,
      attempts: 2,
      p50_ms: 45,
      p99_ms: 60,
    });
    expect(buckets[23]).toEqual({
      start: at(0, 0).toISOString(),
      deliveries: 2,
      succeeded: 1,
      failed: 0,
      attempts: 2,
      p50_ms: 70,
      p99_ms: 99,
    });
    expect(buckets.slice(0, 21).every((b: { deliveries: number }) => b.deliveries === 0)).toBe(true);

    const week = await api.call('GET', `/webhooks/${webhookId}/stats?hours=168`, { key: org.admin });
    expect(week.body.buckets).toHaveLength(168);
    expect(week.body.buckets[168 - 25]).toMatchObject({ deliveries: 1, attempts: 1, p50_ms: 1000 });
    const one = await api.call('GET', `/webhooks/${webhookId}/stats?hours=1`, { key: org.admin });
    expect(one.body.buckets).toEqual([buckets[23]]);
  });

  it('computes a past hour once its attempts are all recorded, and the current hour on every call', async () => {
    const webhookId = await createWebhook();
    const thisHour = Math.floor(Date.now() / HOUR) * HOUR;
    await delivery(webhookId, new Date(thisHour - 3 * HOUR), 'succeeded', [10, 30]);
    await delivery(webhookId, new Date(thisHour), 'succeeded', [100]);
    const stats = async () =>
      (await api.call('GET', `/webhooks/${webhookId}/stats?hours=4`, { key: org.admin })).body.buckets;
    const first = await stats();
    expect(first.map((b: { attempts: number }) => b.attempts)).toEqual([1, 1, 0, 1]);

    // An attempt written behind the service's back into a past hour (attempts never land there once it is settled)
    // shows that hour is not computed again; one in the current hour shows it is.
    await api.db.deliveryAttempt.create({
      data: {
        deliveryId: (await api.db.delivery.findFirstOrThrow({ where: { webhookId } })).id,
        webhookId,
        at: new Date(thisHour - 3 * HOUR + 60_000),
        statusCode: 200,
        durationMs: 5_000,
      },
    });
    await delivery(webhookId, new Date(Date.now() - 1), 'pending', [7]);
    const second = await stats();
    expect(second[0]).toEqual(first[0]);
    expect(second[3]).toMatchObject({ deliveries: 2, attempts: 2 });
  });

  it('answers what the statements compute over the whole window, cached or not', async () => {
    const webhookId = await createWebhook();
    const thisHour = Math.floor(Date.now() / HOUR) * HOUR;
    for (let h = 0; h < 30; h += 3)
      await delivery(webhookId, new Date(thisHour - h * HOUR + 60_000), h % 2 ? 'failed' : 'succeeded', [
        h + 1,
        2 * h + 5,
      ]);
    const pool = sqlPool(api.db);
    const from = new Date(thisHour - 47 * HOUR);
    const direct = async () => {
      const [deliveries, attempts] = await Promise.all([
        webhookDeliveryCounts(pool, webhookId, from, 48),
        webhookAttemptStats(pool, webhookId, from, 48),
      ]);
      return deliveries.map((d, i) => ({
        ...d,
        attempts: attempts[i]!.attempts,
        p50Ms: attempts[i]!.p50Ms,
        p99Ms: attempts[i]!.p99Ms,
      }));
    };
    const cache = new WebhookStats(15_000);
    const fresh = await cache.hours(pool, webhookId, from, 48);
    expect(fresh).toEqual(await direct());
    // From the cache but for the current hour: the same.
    expect(await cache.hours(pool, webhookId, from, 48)).toEqual(fresh);
    // A narrower window inside it, served from the same entries.
    expect(await cache.hours(pool, webhookId, new Date(thisHour - 23 * HOUR), 24)).toEqual(fresh.slice(24));
  });

  it('400 for hours outside 1..168 or not a whole number; 404 for another organisation; 403 without manage_webhooks', async () => {
    const webhookId = await createWebhook();
    for (const hours of ['0', '169', '1.5', 'abc', '']) {
      const r = await api.call('GET', `/webhooks/${webhookId}/stats?hours=${hours}`, { key: org.admin });
      expect([hours, r.status]).toEqual([hours, 400]);
      expect(r.body.error).toMatchObject({ code: 'bad_request', details: [{ path: 'hours' }] });
    }
    const stranger = await createTestOrg(api.db);
    expect((await api.call('GET', `/webhooks/${webhookId}/stats`, { key: stranger.admin })).status).toBe(404);
    expect((await api.call('GET', `/webhooks/${randomUUID()}/stats`, { key: org.admin })).status).toBe(404);
    expect((await api.call('GET', `/webhooks/${webhookId}/stats`, { key: org.nobody })).status).toBe(403);
  });
});
