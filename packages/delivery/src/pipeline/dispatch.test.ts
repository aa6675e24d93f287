import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import { Admission } from '../flow/admission';
import type { AttemptBatchOutcome, AttemptRunner } from '../attempt/runner';
import { LocalDispatcher } from './dispatch';
import { DeliveryQueues } from '../queues/producer';
import { DELIVER_CHUNK } from '../tunables';
import { obliterate, queuedJobs } from '@gatehook/testkit/queues';

/** The organisation of every delivery here: the room is shared by it. */
const ORG = randomUUID();

const prefix = `test_${randomBytes(6).toString('hex')}`;
const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
const queues = new DeliveryQueues(redis, prefix);

afterAll(async () => {
  await obliterate(queues, 'deliver');
  await queues.close();
  await redis.quit();
});

/** A runner with room for `capacity` deliveries whose runs end when the test says so, recording what it was given. */
function controlledRunner(capacity = 10) {
  const given: string[][] = [];
  const finish: ((outcome: AttemptBatchOutcome | Error) => void)[] = [];
  const attempts = (ids: readonly string[]) => {
    given.push([...ids]);
    return new Promise<AttemptBatchOutcome>((resolve, reject) => {
      finish.push((outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)));
    });
  };
  const admission = new Admission(capacity);
  // As the real runner: each delivery's place is given back when its run ends.
  const holding = (ids: readonly string[]) => attempts(ids).finally(() => admission.give(ids.length, ORG));
  const runner = {
    admission,
    runAdmitted: holding,
    runLeased: (leased: readonly { id: string }[]) => holding(leased.map((d) => d.id)),
    leaseWindow: (now: Date) => ({ leaseUntil: new Date(now.getTime() + 30_000), slotDeadline: now.getTime() + 2000 }),
  } as unknown as AttemptRunner;
  return { runner, given, finish, admission };
}

const queuedIds = async () =>
  (await queuedJobs(queues, 'deliver', ['waiting', 'delayed'])).flatMap((j) => j.data.deliveryIds as string[]).sort();

describe('LocalDispatcher', () => {
  beforeEach(() => obliterate(queues, 'deliver'));

  it('runs fresh deliveries in the process while the runner has room for them, and queues them past it', async () => {
    const { runner, given, finish, admission } = controlledRunner(2);
    const dispatcher = new LocalDispatcher(runner, queues);
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    await dispatcher.dispatch([a], ORG);
    await dispatcher.dispatch([b, c], ORG); // one place left: both are queued, not split
    expect(given).toEqual([[a]]);
    expect(admission.inUse).toBe(1);
    expect(await queuedIds()).toEqual([b, c].sort());
    finish[0]!({ sent: 1, skipped: 0, cancelled: 0, busy: [] });
    await dispatcher.close();
    expect(dispatcher.inProgress).toBe(0);
    expect(admission.inUse).toBe(0);
  });

  it('queues what a saturated origin turned away, and everything of a run that failed', async () => {
    const { runner, finish } = controlledRunner();
    const dispatcher = new LocalDispatcher(runner, queues);
    const [busy, sent, lost] = [randomUUID(), randomUUID(), randomUUID()];
    await dispatcher.dispatch([busy, sent], ORG);
    await dispatcher.dispatch([lost], ORG);
    finish[0]!({ sent: 1, skipped: 0, cancelled: 0, busy: [{ id: busy, retryAt: new Date(Date.now() + 60_000) }] });
    finish[1]!(new Error('Postgres is down'));
    await dispatcher.close();
    expect(await queuedIds()).toEqual([busy, lost].sort());
  });

  it('close waits for runs in progress, then sends everything to the queue', async () => {
    const { runner, given, finish } = controlledRunner();
    const dispatcher = new LocalDispatcher(runner, queues);
    await dispatcher.dispatch([randomUUID()], ORG);
    let closed = false;
    const closing = dispatcher.close().then(() => (closed = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    finish[0]!({ sent: 1, skipped: 0, cancelled: 0, busy: [] });
    await closing;
    const late = randomUUID();
    await dispatcher.dispatch([late], ORG);
    expect(given).toHaveLength(1);
    expect(await queuedIds()).toEqual([late]);
  });

  it('a run claimed before commit starts the deliveries created leased; places it did not use are given back', async () => {
    const { runner, given, finish, admission } = controlledRunner(2);
    const dispatcher = new LocalDispatcher(runner, queues);
    const unused = (await dispatcher.claim(2, ORG))!;
    unused.cancel();
    unused.cancel(); // twice is once
    expect(admission.inUse).toBe(0);
    const run = (await dispatcher.claim(2, ORG))!;
    expect(run.leaseUntil.getTime()).toBeGreaterThan(Date.now());
    const id = randomUUID();
    // The commit created one of the two deliveries (the other's event was claimed by a racing fan-out).
    run.start([
      {
        id,
        orgId: randomUUID(),
        webhookId: randomUUID(),
        status: 'pending',
        cycleAttempts: 0,
        throttledStreak: 0,
        bodyEncrypted: 'x',
        contentType: 'application/json',
        leasedUntil: run.leaseUntil,
        awaitingFirstSince: null,
      },
    ]);
    run.cancel(); // after start: gives back nothing its run holds
    expect(given).toEqual([[id]]);
    expect(admission.inUse).toBe(1);
    await dispatcher.dispatch([randomUUID(), randomUUID()], ORG); // no room for two while it runs: queued
    expect(await queuedIds()).toHaveLength(2);
    finish[0]!({ sent: 1, skipped: 0, cancelled: 0, busy: [] });
    await dispatcher.close();
    expect(admission.inUse).toBe(0);
  });

  it('a fan-out waits for room while runs end, and queues when none comes in time or once closing', async () => {
    const { runner, finish, admission } = controlledRunner(1);
    const dispatcher = new LocalDispatcher(runner, queues);
    await dispatcher.dispatch([randomUUID()], ORG); // holds the one place
    const waiting = dispatcher.claim(1, ORG);
    expect(admission.waiting).toBe(1);
    finish[0]!({ sent: 1, skipped: 0, cancelled: 0, busy: [] }); // the run ends: its place passes to the fan-out
    const run = (await waiting)!;
    expect(run).not.toBeNull();
    expect(admission.inUse).toBe(1);
    // Nothing frees the place now: the next claim gives up after ROOM_WAIT_MS, holding nothing.
    expect(await dispatcher.claim(1, ORG)).toBeNull();
    expect(admission.waiting).toBe(0);
    run.cancel();
    await dispatcher.close();
    expect(await dispatcher.claim(1, ORG)).toBeNull();
    expect(admission.inUse).toBe(0);
  });

  it('more deliveries than a job carries go to the queue in chunks, not to one run', async () => {
    const { runner, given } = controlledRunner();
    const dispatcher = new LocalDispatcher(runner, queues);
    const ids = Array.from({ length: DELIVER_CHUNK + 1 }, () => randomUUID());
    await dispatcher.dispatch(ids, ORG);
    expect(given).toEqual([]);
    expect(await queuedIds()).toEqual([...ids].sort());
    expect((await queuedJobs(queues, 'deliver', ['waiting', 'delayed', 'prioritized'])).length).toBe(2);
    await dispatcher.close();
  });
});
