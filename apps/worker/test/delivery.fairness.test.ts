import { createTestOrg, type TestOrg } from '@gatehook/testkit/api';
import { auditEvent, useStack } from '@gatehook/testkit/stack';
import { until } from '@gatehook/testkit/until';

// CONTRACT 15, CPU: one organisation's slow but valid templates must not hold up another organisation's
// deliveries. The template is cheap on the save-time sample (no items) and costs a few hundred milliseconds on
// an event with 10,000 items, each render well under the 1 s budget of the render thread's CPU time.
const PRINTF = '{{$_ := printf "%09999d" 1}}';
const SLOW_TEMPLATE = `{"slow": true{{range .Payload.items}}${PRINTF.repeat(2)}{{end}}}`;
const ITEMS = Array.from({ length: 10_000 }, () => 0);
const A_EVENTS = 10;

const stack = useStack();
let orgB: TestOrg;

beforeAll(async () => {
  orgB = await createTestOrg(stack.api.db);
});

it('delivers another organisation’s event while one organisation’s slow renders are still going', async () => {
  const receiverA = await stack.receiver();
  const receiverB = await stack.receiver();
  await stack.webhook(receiverA, { events: ['anomaly_finding.created'], template: SLOW_TEMPLATE });
  const hookB = await stack.api.call('POST', '/webhooks', {
    key: orgB.admin,
    body: { name: 'plain', url: receiverB.url('/b'), events: ['*'] },
  });
  expect(hookB.status).toBe(201);

  // Each of A's events is its own ingestion, so A has as many fan-out jobs waiting for the render pool.
  await Promise.all(
    Array.from({ length: A_EVENTS }, () =>
      stack.ingest([auditEvent({ action: 'anomaly_finding.created', payload: { severity: 'high', items: ITEMS } })]),
    ),
  );
  const ingestedB = await stack.api.call('POST', '/audit-events', {
    key: orgB.admin,
    body: { events: [auditEvent()] },
  });
  expect(ingestedB.status).toBe(202);

  await receiverB.waitFor((requests) => requests.length === 1, 15_000);
  const deliveredToA = receiverA.requests.length;
  expect(deliveredToA).toBeLessThan(A_EVENTS);

  // A's renders were valid and slow, not failing: every one of them arrives in the end.
  await until(
    async () => receiverA.requests.length,
    (n) => n === A_EVENTS,
    60_000,
  );
  expect(receiverA.requests.every((r) => r.body === '{"slow": true}')).toBe(true);
}, 90_000);
