import { publishInvalidation } from '@gatehook/cache/invalidation';
import type { Config } from '@gatehook/core/config';
import { startTracing, type Tracing } from '@gatehook/core/tracing';
import type { Prisma } from '@gatehook/db/client';
import { WEBHOOKS_TOPIC } from '@gatehook/delivery/webhook-configs';
import { createTestOrg, startTestApi, testConfig, type TestApi, type TestOrg } from './api';
import { createTestDatabase } from './database';
import { startTestEngine } from './engine';
import { startReceiver, testCa, type ReplyFn, type TestReceiver } from './receiver';
import { until } from './until';
import type { HostLookup } from '@gatehook/egress/address-policy';

export interface Stack {
  config: Config;
  api: TestApi;
  engine: Awaited<ReturnType<typeof startTestEngine>>;
  org: TestOrg;
  /** The process's tracing, started for the API and the engine when `env` sets an OTLP endpoint. */
  tracing: Tracing;
  /** Starts an HTTPS receiver that the stack closes with itself. */
  receiver(reply?: ReplyFn, options?: { clientCa?: string }): Promise<TestReceiver>;
  /** Creates a webhook pointing at a receiver; returns its id and signing secret. */
  webhook(
    receiver: TestReceiver,
    body?: Record<string, unknown>,
    path?: string,
  ): Promise<{ id: string; secret: string }>;
  /**
   * Writes a webhook row behind the API's back (a stored value the API would refuse today) and, like every
   * writer of webhook configuration, announces it to the workers' caches.
   */
  writeWebhookRow(webhookId: string, data: Prisma.WebhookUpdateInput): Promise<void>;
  /** Ingests events through the API and returns their ids. */
  ingest(events: Record<string, unknown>[]): Promise<string[]>;
  /**
   * Waits until nothing more can happen to these events: each is fanned out, none waits in a batch buffer, and
   * every delivery holding one is final (succeeded or failed) with no attempt in flight (no lease). After this,
   * what a receiver got is all it will ever get for them, so a test may assert that something did not happen.
   */
  settle(eventIds: readonly string[], timeoutMs?: number): Promise<void>;
  /** Polls the API until a delivery list satisfies `predicate`. */
  deliveries(
    webhookId: string,
    predicate: (items: DeliveryView[]) => boolean,
    timeoutMs?: number,
  ): Promise<DeliveryView[]>;
  close(): Promise<void>;
}

export interface DeliveryView {
  id: string;
  status: string;
  event_count: number;
  attempt_count: number;
  attempts: { at: string; status_code: number; error: string; duration_ms: number; response_snippet: string }[];
  next_retry_at?: string;
  retryable: boolean;
}

/**
 * A delivery test stack: the real API and worker engine on a database and Redis prefix of their own, with
 * receivers on 127.0.0.1 trusted.
 */
export async function startStack(
  env: Record<string, string> = {},
  options: {
    reconcilerGrace?: { eventsMs: number; deliveriesMs: number };
    logLines?: string[];
    lookup?: HostLookup;
  } = {},
): Promise<Stack> {
  const database = await createTestDatabase();
  const config = testConfig({
    DATABASE_URL: database.url,
    EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
    EGRESS_EXTRA_CA_FILE: testCa().caFile,
    DELIVERY_RETRY_SCHEDULE: '0,0.2,0.2,0.2,0.2,0.2,0.2,0.2',
    BATCH_LINGER_MS: '200',
    DELIVERY_TIMEOUT_MS: '2000',
    RECONCILE_INTERVAL_MS: '500',
    ...env,
  });
  const tracing = await startTracing(config, 'gatehook-test');
  const api = await startTestApi({
    config,
    ...(options.logLines ? { logLines: options.logLines } : {}),
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  const engine = await startTestEngine(config, options);
  const org = await createTestOrg(api.db);
  const receivers: TestReceiver[] = [];
  return {
    config,
    api,
    engine,
    org,
    tracing,
    async receiver(reply, receiverOptions) {
      const started = await startReceiver(reply, receiverOptions);
      receivers.push(started);
      return started;
    },
    async webhook(receiver, body = {}, path = '/hook') {
      const r = await api.call('POST', '/webhooks', {
        key: org.admin,
        body: { name: 'test', url: receiver.url(path), events: ['*'], ...body },
      });
      if (r.status !== 201) throw new Error(`webhook create failed: ${r.status} ${r.text}`);
      return { id: r.body.id, secret: r.body.secret };
    },
    async writeWebhookRow(webhookId, data) {
      await api.db.webhook.update({ where: { id: webhookId }, data });
      await publishInvalidation(api.redis, config.REDIS_PREFIX, WEBHOOKS_TOPIC, [org.orgId]);
      // The announcement reaches the worker's subscriber some time later (on a cluster, through another node): the
      // test's next event must not race it, so this worker's entry is dropped here as well.
      engine.configs.invalidate(org.orgId);
    },
    async ingest(events) {
      const r = await api.call('POST', '/audit-events', { key: org.admin, body: { events } });
      if (r.status !== 202) throw new Error(`ingest failed: ${r.status} ${r.text}`);
      return r.body.ids;
    },
    async settle(eventIds, timeoutMs = 15_000) {
      const ids = [...eventIds];
      await until(
        async () => {
          const [unclaimed, buffered, open] = await Promise.all([
            api.db.pendingFanout.count({ where: { orgId: org.orgId, eventId: { in: ids } } }),
            api.db.batchItem.count({ where: { orgId: org.orgId, eventId: { in: ids } } }),
            api.db.delivery.count({
              where: {
                orgId: org.orgId,
                eventIds: { hasSome: ids },
                OR: [{ status: { in: ['pending', 'retrying'] } }, { leasedUntil: { not: null } }],
              },
            }),
          ]);
          return unclaimed + buffered + open;
        },
        (remaining) => remaining === 0,
        timeoutMs,
      );
    },
    async deliveries(webhookId, predicate, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const r = await api.call('GET', `/webhooks/${webhookId}/deliveries?limit=100`, { key: org.admin });
        const items = (r.body?.items ?? []) as DeliveryView[];
        if (predicate(items)) return items;
        if (Date.now() > deadline)
          throw new Error(
            `deliveries: condition not met within ${timeoutMs} ms: ${JSON.stringify(items.map((d) => [d.status, d.attempt_count]))}`,
          );
        await new Promise((r2) => setTimeout(r2, 50));
      }
    },
    async close() {
      await Promise.allSettled(receivers.map((r) => r.close()));
      await engine.stop();
      await api.close();
      await tracing.stop();
      await database.drop();
    },
  };
}

/** A minimal valid audit event for ingestion. */
export function auditEvent(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    action: 'policy.created',
    actor_type: 'user',
    actor_id: 'u-1',
    actor_display_name: 'Ada',
    resource_type: 'policy',
    resource_id: 'p-1',
    resource_display_name: 'Default policy',
    payload: { policy_name: 'Default policy', effect: 'allow' },
    ...overrides,
  };
}

/**
 * The preamble of a file (or describe block) of stack tests: starts a stack before its tests and closes it after
 * them. The returned stack reads the one started, so it is used like a stack from inside tests and hooks.
 */
export function useStack(...args: Parameters<typeof startStack>): Stack {
  let started: Stack | undefined;
  beforeAll(async () => {
    started = await startStack(...args);
  });
  afterAll(async () => {
    await started?.close();
  });
  return new Proxy({} as Stack, {
    get(_, key) {
      if (!started) throw new Error('the stack is used before its beforeAll started it');
      return Reflect.get(started, key);
    },
  });
}
