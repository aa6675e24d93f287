import { randomBytes, randomUUID } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import { until } from '@gatehook/testkit/until';
import { countsItsStart } from './fanout-guard';
import { MAX_FANOUT_ATTEMPTS } from '../tunables';

describe('MAX_FANOUT_ATTEMPTS', () => {
  it('is 5', () => {
    expect(MAX_FANOUT_ATTEMPTS).toBe(5);
  });
});

describe('countsItsStart', () => {
  it.each([
    ['an ingested event on its first run (the hot path)', false, 1, 0, false],
    ['a retry after an ordinary failure (Postgres away)', false, 2, 1, false],
    ["a reconciler copy's first start", true, 1, 0, true],
    ["a reconciler copy's retry after an ordinary failure", false, 2, 1, true],
    ['a start after one that died with its worker', true, 2, 0, false],
    ['a reconciler copy started again after dying', true, 3, 1, true],
  ])('%s counts its start: %p', (_what, counts, attemptsStarted, attemptsMade, recovered) => {
    expect(countsItsStart({ attemptsStarted, attemptsMade }, recovered)).toBe(counts);
  });

  // The counters as BullMQ keeps them, read by a real worker: the rule above rests on them.
  describe('on BullMQ jobs', () => {
    const prefix = `test_${randomBytes(6).toString('hex')}`;
    const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    const queue = new Queue('fanout', { connection: redis, prefix });
    afterAll(async () => {
      await queue.obliterate({ force: true });
      await queue.close();
      await redis.quit();
    });

    const seen: { id: string; attemptsStarted: number; attemptsMade: number }[] = [];
    const record = (job: Job) =>
      seen.push({ id: job.id!, attemptsStarted: job.attemptsStarted, attemptsMade: job.attemptsMade });

    it('a retry after a thrown error is not counted; a start after a stalled one is', async () => {
      const failedOnce = randomUUID();
      const stalled = randomUUID();
      await queue.add('fanout', {}, { jobId: failedOnce, attempts: 2 });
      let hang!: () => void;
      const hanging = new Promise<void>((resolve) => (hang = resolve));
      const [firstConnection, secondConnection] = [redis.duplicate(), redis.duplicate()];
      const first = new Worker(
        'fanout',
        async (job: Job) => {
          record(job);
          if (job.id === failedOnce && job.attemptsMade === 0) throw new Error('transient');
          if (job.id === stalled) await hanging; // dies here: its worker stops renewing the lock
        },
        { connection: firstConnection, prefix, lockDuration: 1000, skipStalledCheck: true },
      );
      await until(
        async () => seen.filter((s) => s.id === failedOnce).length,
        (n) => n === 2,
        10_000,
      );
      await queue.add('fanout', {}, { jobId: stalled });
      await until(async () => seen.some((s) => s.id === stalled), Boolean, 10_000);
      await first.close(true);

      const second = new Worker(
        'fanout',
        async (job: Job) => {
          record(job);
        },
        { connection: secondConnection, prefix, lockDuration: 1000, stalledInterval: 300 },
      );
      await until(
        async () => seen.filter((s) => s.id === stalled).length,
        (n) => n === 2,
        10_000,
      );
      await second.close();
      hang();
      await Promise.all([firstConnection.quit(), secondConnection.quit()]);

      const counted = seen.map((s) => [s.id === failedOnce ? 'failedOnce' : 'stalled', countsItsStart(s, false)]);
      expect(counted).toEqual([
        ['failedOnce', false],
        ['failedOnce', false],
        ['stalled', false],
        ['stalled', true],
      ]);
    });
  });
});
