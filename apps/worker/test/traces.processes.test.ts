import { randomBytes } from 'node:crypto';
import { createDb, type Db } from '@gatehook/db/client';
import { createTestOrg } from '@gatehook/testkit/api';
import { createTestDatabase } from '@gatehook/testkit/database';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import { startOtlpCollector, type OtlpCollector } from '@gatehook/testkit/otlp-collector';
import { startServiceProcess, type ServiceProcess } from '@gatehook/testkit/processes';
import { startReceiver, testCa, type TestReceiver } from '@gatehook/testkit/receiver';
import { auditEvent } from '@gatehook/testkit/stack';
import { until } from '@gatehook/testkit/until';

// Traces (CONTRACT 17) from the real service processes, as deployed: the API and the worker each start their own
// tracing from the standard variables (apps/*/src/main.ts) and one trace crosses from one to the other through
// the queue.

jest.setTimeout(90_000);

let database: { url: string; drop(): Promise<void> };
let db: Db;
let collector: OtlpCollector;
let receiver: TestReceiver;
const services: ServiceProcess[] = [];

beforeAll(async () => {
  [database, collector, receiver] = await Promise.all([createTestDatabase(), startOtlpCollector(), startReceiver()]);
  db = createDb(database.url, { poolSize: 2 });
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: `test_${randomBytes(6).toString('hex')}`,
    NODE_ENV: 'test',
    EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
    EGRESS_EXTRA_CA_FILE: testCa().caFile,
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '50',
  };
  services.push(...(await Promise.all([startServiceProcess('api', env), startServiceProcess('worker', env)])));
});
afterAll(async () => {
  // SIGTERM: each process stops its tracing (exporting what is left) before it exits.
  await Promise.allSettled(services.map((s) => s.kill('SIGTERM')));
  await Promise.allSettled([receiver?.close(), collector?.close(), db?.$disconnect()]);
  await database?.drop();
});

async function post(path: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`http://127.0.0.1:${services[0]!.port}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

it('one trace runs from the API process through the worker process to the receiver', async () => {
  const org = await createTestOrg(db);
  const hook = await post('/webhooks', org.admin, {
    name: 'traced',
    url: receiver.url('/traced'),
    events: ['policy.created'],
  });
  expect(hook.status).toBe(201);
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  const ingested = await post(
    '/audit-events',
    org.admin,
    { events: [auditEvent()] },
    { traceparent: `00-${traceId}-${parentId}-01` },
  );
  expect(ingested.status).toBe(202);
  await receiver.waitFor((reqs) => reqs.length === 1);

  const spans = await until(
    async () => collector.spans().filter((s) => s.traceId === traceId),
    (found) =>
      ['POST /audit-events', 'gatehook.fanout', 'gatehook.delivery.attempt'].every((name) =>
        found.some((s) => s.name === name),
      ),
  );
  const byName = (name: string) => spans.find((s) => s.name === name)!;
  const ingestion = byName('POST /audit-events');
  const fanout = byName('gatehook.fanout');
  const attempt = byName('gatehook.delivery.attempt');
  expect(ingestion).toMatchObject({ service: 'gatehook-api', parentSpanId: parentId });
  expect(fanout).toMatchObject({ service: 'gatehook-worker', parentSpanId: ingestion.spanId });
  expect(attempt).toMatchObject({ service: 'gatehook-worker', parentSpanId: fanout.spanId });
  expect(attempt.attributes).toMatchObject({ 'gatehook.webhook.id': hook.body.id, 'http.response.status_code': 200 });
  expect(receiver.requests[0]!.headers.traceparent).toBe(`00-${traceId}-${attempt.spanId}-01`);
});
