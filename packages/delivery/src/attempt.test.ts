import { randomUUID } from 'node:crypto';
import { SecretBox } from '@gatehook/core/encryption';
import { DEVELOPMENT_ENCRYPTION_KEY } from '@gatehook/core/config';
import { createDb, sqlPool } from '@gatehook/db/client';
import { TEST_DATABASE_URL } from '@gatehook/testkit/env';
import { AttemptRunner, OriginLimiter, type AttemptDeps } from './attempt';
import type { DeliveryQueues } from './jobs';
import { WebhookConfigs } from './webhook-configs';

const db = createDb(TEST_DATABASE_URL, { poolSize: 2 });
afterAll(() => db.$disconnect());

function deps(limiter: OriginLimiter): AttemptDeps {
  const box = new SecretBox(DEVELOPMENT_ENCRYPTION_KEY);
  return {
    db,
    pool: sqlPool(db),
    box,
    configs: new WebhookConfigs(db, box),
    announce: async () => undefined,
    batchLingerMs: 1000,
    // Neither path below enqueues or sends: a delivery that is turned away or unknown never gets that far.
    queues: {} as DeliveryQueues,
    send: async () => {
      throw new Error('nothing is sent in these tests');
    },
    limiter,
    retrySchedule: [0, 5, 300, 1800, 7200, 18000, 36000, 36000],
    retryAfterCapSeconds: 3600,
    circuitBreakerSeconds: 259200,
    timeoutMs: 1000,
  };
}

describe('OriginLimiter', () => {
  it('caps requests in flight per origin', () => {
    const limiter = new OriginLimiter(2);
    expect([limiter.tryAcquire('https://a'), limiter.tryAcquire('https://a'), limiter.tryAcquire('https://a')]).toEqual([true, true, false]);
    expect(limiter.isFull('https://a')).toBe(true);
    expect(limiter.tryAcquire('https://b')).toBe(true);
    limiter.release('https://a');
    expect(limiter.isFull('https://a')).toBe(false);
  });

  it('remembers waiting deliveries, bounded', () => {
    const limiter = new OriginLimiter(1, 3);
    for (const id of ['d1', 'd2', 'd3']) limiter.noteWaiting(id, 'https://a');
    expect(limiter.waitingFor('d2')).toBe('https://a');
    limiter.noteWaiting('d4', 'https://a'); // past the bound the memory starts over
    expect(limiter.waitingFor('d1')).toBeUndefined();
    expect(limiter.waitingFor('d4')).toBe('https://a');
    limiter.doneWaiting('d4');
    expect(limiter.waitingFor('d4')).toBeUndefined();
  });
});

describe('AttemptRunner and a full origin', () => {
  it('turns a delivery that already waits for a full origin away again without reading the database', async () => {
    const limiter = new OriginLimiter(1);
    const runner = new AttemptRunner(deps(limiter));
    const id = randomUUID(); // in no database: a lease would find nothing and count it skipped
    limiter.noteWaiting(id, 'https://dead.example');
    expect(limiter.tryAcquire('https://dead.example')).toBe(true);
    const outcome = await runner.run([id]);
    expect(outcome).toMatchObject({ sent: 0, skipped: 0, cancelled: 0 });
    expect(outcome.busy.map((b) => b.id)).toEqual([id]);
    expect(outcome.busy[0]!.retryAt.getTime()).toBeGreaterThan(Date.now());
    // Once the origin has a free slot the delivery takes its turn through the database, and stops waiting.
    limiter.release('https://dead.example');
    expect(await runner.run([id])).toEqual({ sent: 0, skipped: 1, cancelled: 0, busy: [] });
    expect(limiter.waitingFor(id)).toBeUndefined();
  });
});

describe('OriginLimiter waiting for a turn', () => {
  const far = () => Date.now() + 60_000;

  it('hands a freed origin slot to the oldest waiter, not to a newcomer', async () => {
    const limiter = new OriginLimiter(1);
    expect(await limiter.acquire('https://a', far())).toBe(true);
    const order: string[] = [];
    const first = limiter.acquire('https://a', far()).then((ok) => order.push(`first ${ok}`));
    const second = limiter.acquire('https://a', far()).then((ok) => order.push(`second ${ok}`));
    expect(limiter.tryAcquire('https://a')).toBe(false);
    limiter.release('https://a');
    await first;
    expect(order).toEqual(['first true']);
    limiter.release('https://a');
    await second;
    expect(order).toEqual(['first true', 'second true']);
    limiter.release('https://a');
    expect(limiter.isFull('https://a')).toBe(false);
  });

  it('gives up at the deadline holding nothing, and the slot it waited for stays usable', async () => {
    const limiter = new OriginLimiter(1);
    expect(await limiter.acquire('https://dead', far())).toBe(true);
    expect(await limiter.acquire('https://dead', Date.now() + 30)).toBe(false);
    limiter.release('https://dead');
    expect(limiter.isFull('https://dead')).toBe(false);
    expect(limiter.tryAcquire('https://dead')).toBe(true);
    limiter.release('https://dead');
  });

  it('waits for one of the process-wide slots too, and gives the origin slot back when that wait fails', async () => {
    const limiter = new OriginLimiter(10, 100, 1);
    expect(await limiter.acquire('https://a', far())).toBe(true);
    let second: boolean | undefined;
    const waiting = limiter.acquire('https://b', far()).then((ok) => (second = ok));
    await Promise.resolve();
    expect(second).toBeUndefined();
    limiter.release('https://a');
    await waiting;
    expect(second).toBe(true);
    // The process is full again: a third request times out and leaves its origin's slot free.
    expect(await limiter.acquire('https://c', Date.now() + 30)).toBe(false);
    expect(limiter.isFull('https://c')).toBe(false);
    limiter.release('https://b');
  });
});
