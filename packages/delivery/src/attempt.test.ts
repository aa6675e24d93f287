import { randomUUID } from 'node:crypto';
import { SecretBox } from '@gatehook/core/encryption';
import { DEVELOPMENT_ENCRYPTION_KEY } from '@gatehook/core/config';
import { createDb } from '@gatehook/db/client';
import { TEST_DATABASE_URL } from '@gatehook/testkit/env';
import { attemptDelivery, OriginLimiter, type AttemptDeps } from './attempt';
import type { DeliveryQueues } from './jobs';

const db = createDb(TEST_DATABASE_URL, { poolSize: 2 });
afterAll(() => db.$disconnect());

function deps(limiter: OriginLimiter): AttemptDeps {
  return {
    db,
    box: new SecretBox(DEVELOPMENT_ENCRYPTION_KEY),
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

describe('attemptDelivery and a full origin', () => {
  it('turns a delivery that already waits for a full origin away again without reading the database', async () => {
    const limiter = new OriginLimiter(1);
    const id = randomUUID(); // in no database: any read would answer not_found
    limiter.noteWaiting(id, 'https://dead.example');
    expect(limiter.tryAcquire('https://dead.example')).toBe(true);
    const outcome = await attemptDelivery(deps(limiter), id);
    expect(outcome.kind).toBe('origin_busy');
    if (outcome.kind === 'origin_busy') expect(outcome.retryAt.getTime()).toBeGreaterThan(Date.now());
    // Once the origin has a free slot the delivery takes its turn through the database, and stops waiting.
    limiter.release('https://dead.example');
    expect(await attemptDelivery(deps(limiter), id)).toEqual({ kind: 'skipped', reason: 'not_found' });
    expect(limiter.waitingFor(id)).toBeUndefined();
  });
});
