import { createTestOrg, type TestOrg } from '@gatehook/testkit/api';
import type { TestReceiver } from '@gatehook/testkit/receiver';
import { auditEvent, useStack } from '@gatehook/testkit/stack';

// The service's defaults (no per-origin cap, DELIVERY_CONCURRENCY 50), but a timeout longer than any test here, so
// that a request that never answers holds its slot for the whole test: whatever else is delivered meanwhile went
// out while it hung.
const stack = useStack({ DELIVERY_TIMEOUT_MS: '120000' });

async function webhookOf(org: TestOrg, url: string, events: string[]): Promise<string> {
  const r = await stack.api.call('POST', '/webhooks', { key: org.admin, body: { name: 'fair', url, events } });
  if (r.status !== 201) throw new Error(`webhook create failed: ${r.status} ${r.text}`);
  return r.body.id;
}

async function ingestAs(org: TestOrg, events: Record<string, unknown>[]): Promise<void> {
  const r = await stack.api.call('POST', '/audit-events', { key: org.admin, body: { events } });
  if (r.status !== 202) throw new Error(`ingest failed: ${r.status} ${r.text}`);
}

async function attemptsOf(org: TestOrg, webhookId: string): Promise<number[]> {
  const r = await stack.api.call('GET', `/webhooks/${webhookId}/deliveries?limit=100`, { key: org.admin });
  return r.body.items.map((d: { attempt_count: number }) => d.attempt_count);
}

const hanging = (receiver: TestReceiver) => receiver.requests.filter((q) => q.path.startsWith('/hang')).length;

describe('fair share of the worker (CONTRACT 15)', () => {
  it("one path that never answers does not hold back 20 other tenants' webhooks on the same origin", async () => {
    // One origin, as every tenant's Slack or PagerDuty webhook shares one: paths tell the webhooks apart.
    const receiver = await stack.receiver((q) => (q.path.startsWith('/hang') ? 'hang' : { status: 200 }));
    const stuck = await webhookOf(stack.org, receiver.url('/hang'), ['gateway.tool.error']);
    await ingestAs(
      stack.org,
      Array.from({ length: 40 }, () => auditEvent({ action: 'gateway.tool.error' })),
    );
    await receiver.waitFor(() => hanging(receiver) >= 2);

    const tenants = await Promise.all(Array.from({ length: 4 }, () => createTestOrg(stack.api.db)));
    for (const [t, org] of tenants.entries()) {
      for (let w = 0; w < 5; w += 1) await webhookOf(org, receiver.url(`/ok/${t}/${w}`), ['gateway.tool.called']);
    }
    for (const org of tenants)
      await ingestAs(
        org,
        Array.from({ length: 5 }, () => auditEvent({ action: 'gateway.tool.called' })),
      );
    // 4 tenants × 5 webhooks × 5 events. With 10 slots per origin (the old default) the hanging path held them all
    // until its timeout, and none of these went out.
    await receiver.waitFor((reqs) => reqs.filter((q) => q.path.startsWith('/ok/')).length >= 100, 25_000);

    // They all went while the hanging path held its requests: not one of its attempts has ended.
    expect((await attemptsOf(stack.org, stuck)).every((n) => n === 0)).toBe(true);
    // And it holds few slots: its adaptive limit, far from the 40 it has waiting.
    expect(receiver.inFlight().now).toBeLessThanOrEqual(10);
  });

  it("one organisation's five endpoints that never answer leave another organisation its deliveries", async () => {
    const a = await createTestOrg(stack.api.db);
    const dead = await Promise.all(Array.from({ length: 5 }, () => stack.receiver(() => 'hang')));
    const deadHooks = [];
    for (const r of dead) deadHooks.push(await webhookOf(a, r.url('/hang'), ['policy.created']));
    await ingestAs(
      a,
      Array.from({ length: 20 }, () => auditEvent({ action: 'policy.created' })),
    );
    // Each endpoint is holding requests: with 10 slots per origin (the old default) the five held all 50 slots.
    for (const r of dead) await r.waitFor((reqs) => reqs.length >= 1);

    const b = await createTestOrg(stack.api.db);
    const healthy = await stack.receiver();
    await webhookOf(b, healthy.url('/b'), ['policy.created']);
    await ingestAs(
      b,
      Array.from({ length: 10 }, () => auditEvent({ action: 'policy.created' })),
    );
    await healthy.waitFor((reqs) => reqs.length >= 10, 25_000);

    for (const id of deadHooks) expect((await attemptsOf(a, id)).every((n) => n === 0)).toBe(true);
  });
});
