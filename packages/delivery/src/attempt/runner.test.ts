import { randomUUID } from 'node:crypto';
import { SecretBox } from '@gatehook/core/encryption';
import { DEVELOPMENT_ENCRYPTION_KEY } from '@gatehook/core/config';
import { createDb, sqlPool } from '@gatehook/db/client';
import { TEST_DATABASE_URL } from '@gatehook/testkit/env';
import { generateSigningSecret } from '@gatehook/core/signing-secret';
import { AttemptRunner, type AttemptDeps, type RunnableDelivery } from './runner';
import { prepareRequest } from './stages';
import { Admission } from '../flow/admission';
import { createFlowControl } from '../flow/flow-control';
import type { DeliveryQueues } from '../queues/producer';
import { SendScheduler } from '../flow/fair-share';
import type { RenderPool } from '../render/pool';
import { sealBody } from '../render/stored-body';
import { toLiveWebhook, WebhookConfigs } from '../webhook-configs';
import { waitFor } from '@gatehook/testkit/until';

const db = createDb(TEST_DATABASE_URL, { poolSize: 2 });
afterAll(() => db.$disconnect());

function deps(scheduler: SendScheduler, maxInProgress?: number): AttemptDeps {
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
    render: {} as RenderPool,
    send: async () => {
      throw new Error('nothing is sent in these tests');
    },
    flow: createFlowControl({ room: new Admission(maxInProgress ?? Number.POSITIVE_INFINITY), slots: scheduler }),
    retrySchedule: [0, 5, 300, 1800, 7200, 18000, 36000, 36000],
    retryAfterCapSeconds: 3600,
    circuitBreakerSeconds: 259200,
    timeoutMs: 1000,
  };
}

describe('AttemptRunner and a full webhook', () => {
  it('turns a delivery that already waits for a full webhook away again without reading the database', async () => {
    const scheduler = new SendScheduler({ slots: 10, endpointMax: 1, originMax: 0 });
    const runner = new AttemptRunner(deps(scheduler));
    const id = randomUUID(); // in no database: a lease would find nothing and count it skipped
    const webhookId = randomUUID();
    scheduler.noteWaiting(id, webhookId);
    const turn = await scheduler.acquire(
      { orgId: randomUUID(), webhookId, origin: 'https://dead.example' },
      Date.now() + 1000,
    );
    expect(turn).not.toBeNull();
    const outcome = await runner.run([id]);
    expect(outcome).toMatchObject({ sent: 0, skipped: 0, cancelled: 0 });
    expect(outcome.busy.map((b) => b.id)).toEqual([id]);
    expect(outcome.busy[0]!.retryAt.getTime()).toBeGreaterThan(Date.now());
    // Once the webhook has a free slot the delivery takes its turn through the database, and stops waiting.
    turn!.release();
    expect(await runner.run([id])).toEqual({ sent: 0, skipped: 1, cancelled: 0, busy: [] });
    expect(scheduler.waitingFor(id)).toBeUndefined();
  });
});

describe('AttemptRunner and the leases it gives back', () => {
  it('gives back the leases of concurrent runs in one statement, not one per run', async () => {
    const runnerDeps = deps(new SendScheduler({ slots: 10, endpointMax: 10, originMax: 0 }));
    const runner = new AttemptRunner(runnerDeps);
    const orgId = randomUUID(); // no webhooks: each delivery is cancelled (webhook_deleted), and its lease given back
    await runnerDeps.configs.ofOrg(orgId);
    const delivery = (): RunnableDelivery => ({
      id: randomUUID(),
      orgId,
      webhookId: randomUUID(),
      status: 'pending',
      cycleAttempts: 0,
      throttledStreak: 0,
      bodyEncrypted: 'x',
      body: 'x',
      contentType: 'application/json',
      leasedUntil: new Date(Date.now() + 60_000),
      awaitingFirstSince: null,
    });
    const query = jest.spyOn(runnerDeps.pool, 'query');
    const runs = await Promise.all(
      Array.from({ length: 12 }, () => runner.runLeased([delivery()], Date.now() + 1000, orgId)),
    );
    expect(runs.every((r) => r.cancelled === 1)).toBe(true);
    // One statement per run before; now the first two go at once (two in flight) and the rest together.
    const releases = query.mock.calls.filter(([config]) => (config as { name?: string }).name === 'release_deliveries');
    expect(releases.length).toBeGreaterThan(0);
    expect(releases.length).toBeLessThanOrEqual(3);
    query.mockRestore();
  });
});

describe('AttemptRunner and its room', () => {
  it('waits for places before it leases anything, and gives back the places of deliveries it could not lease', async () => {
    const runner = new AttemptRunner(deps(new SendScheduler({ slots: 10, endpointMax: 10, originMax: 0 }), 2));
    await runner.admission.take(2); // the process is full
    const ids = [randomUUID(), randomUUID()]; // in no database: their lease finds nothing
    const run = runner.run(ids);
    await waitFor(() => runner.admission.waiting === 1, { everyMs: 0 });
    expect(runner.admission.inUse).toBe(2);
    runner.admission.give(2);
    expect(await run).toEqual({ sent: 0, skipped: 2, cancelled: 0, busy: [] });
    expect(runner.admission.inUse).toBe(0);
  });
});

describe('prepareRequest', () => {
  const box = new SecretBox(DEVELOPMENT_ENCRYPTION_KEY);
  const webhookId = randomUUID();
  const webhook = toLiveWebhook(
    {
      id: webhookId,
      orgId: randomUUID(),
      name: 'w',
      status: 'active',
      events: ['*'],
      condition: '',
      format: 'single',
      maxEvents: 1,
      template: '',
      urlEncrypted: box.encrypt('https://receiver.example/hook', { column: 'webhooks.url_encrypted', row: webhookId }),
      varNames: [],
      varsEncrypted: null,
      headersEncrypted: null,
      secretEncrypted: box.encrypt(generateSigningSecret(), { column: 'webhooks.secret_encrypted', row: webhookId }),
      previousSecretEncrypted: null,
      previousSecretValidUntil: null,
      activeSince: new Date(0),
      clientCertificateEncrypted: null,
      rateLimitPerSecond: null,
      auth: null,
      authSecretEncrypted: null,
    },
    box,
  );
  const body = JSON.stringify({ type: 'tool.called', data: { id: randomUUID(), note: 'x'.repeat(5000) } });
  const deliveryId = randomUUID();
  const delivery: RunnableDelivery = {
    id: deliveryId,
    orgId: webhook.orgId,
    webhookId: webhook.id,
    status: 'pending',
    cycleAttempts: 0,
    throttledStreak: 0,
    bodyEncrypted: sealBody(box, body, deliveryId, webhook),
    contentType: 'application/json',
    leasedUntil: new Date(Date.now() + 10_000),
    awaitingFirstSince: null,
  };
  const now = new Date();

  it('sends the body fan-out has in hand without decrypting the stored copy, byte for byte as the stored copy would', () => {
    const fromStore = prepareRequest({ box }, webhook, delivery, now);
    expect(fromStore.body).toBe(body);
    // A stored value that cannot be opened shows that the body in hand is used as it is.
    const inHand = prepareRequest({ box }, webhook, { ...delivery, bodyEncrypted: 'not a token', body }, now);
    expect(inHand).toEqual(fromStore);
    expect(() => prepareRequest({ box }, webhook, { ...delivery, bodyEncrypted: 'not a token' }, now)).toThrow();
  });
});
