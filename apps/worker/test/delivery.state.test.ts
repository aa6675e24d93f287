import { createHmac } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { createTestOrg } from '@gatehook/testkit/api';
import { tunables } from '@gatehook/delivery';
import { auditEvent, startStack, useStack } from '@gatehook/testkit/stack';

const stack = useStack({ DELIVERY_RETRY_SCHEDULE: '0,0.3,0.3,0.3,0.3,0.3,0.3,0.3' });

const call = (method: string, path: string) => stack.api.call(method, path, { key: stack.org.admin });

describe('pause and resume (SPEC 3.2)', () => {
  it('pause fails queued deliveries; events during the pause are dropped; resume delivers only new events', async () => {
    let healthy = false;
    const r = await stack.receiver(() => (healthy ? { status: 200 } : { status: 500 }));
    const hook = await stack.webhook(r, { events: ['policy.created'] });
    await stack.ingest([auditEvent()]);
    await stack.deliveries(hook.id, (items) => items[0]?.status === 'retrying');

    expect((await call('POST', `/webhooks/${hook.id}/pause`)).body.status).toBe('paused');
    const [cancelled] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');
    const detail = await call('GET', `/webhooks/${hook.id}/deliveries/${cancelled!.id}`);
    expect(detail.body.error).toBe('webhook_paused');

    const during = await stack.ingest([auditEvent({ payload: { policy_name: 'during pause' } })]);
    // Fanned out while paused: it has no delivery, and fan-out is the only place one is made.
    await stack.settle(during);
    healthy = true;
    const resumed = await call('POST', `/webhooks/${hook.id}/resume`);
    expect(resumed.body).toMatchObject({ status: 'active', failing_since: null });
    const [after] = await stack.ingest([auditEvent({ payload: { policy_name: 'after resume' } })]);

    await r.waitFor((reqs) => reqs.some((q) => JSON.parse(q.body).data.id === after));
    expect(await stack.api.db.delivery.count({ where: { eventIds: { has: during[0]! } } })).toBe(0);
    const delivered = r.requests.map((q) => JSON.parse(q.body).data.id);
    expect(delivered).not.toContain(during[0]);
  });

  it('disable fails queued deliveries and nothing more is sent', async () => {
    const r = await stack.receiver(() => ({ status: 500 }));
    const hook = await stack.webhook(r);
    const ids = await stack.ingest([auditEvent()]);
    await stack.deliveries(hook.id, (items) => items[0]?.status === 'retrying');
    await call('POST', `/webhooks/${hook.id}/disable`);
    const [failed] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');
    // Final and with no attempt in flight: every request the receiver got is a recorded attempt, and no more come.
    await stack.settle(ids);
    expect(r.requests.length).toBe(await stack.api.db.deliveryAttempt.count({ where: { deliveryId: failed!.id } }));
    expect((await call('GET', `/webhooks/${hook.id}/deliveries/${failed!.id}`)).body.error).toBe('webhook_disabled');
  });
});

describe('delete', () => {
  it('cancels pending deliveries: nothing more is sent and the history goes with the webhook', async () => {
    const r = await stack.receiver(() => ({ status: 500 }));
    const hook = await stack.webhook(r);
    await stack.ingest([auditEvent()]);
    const [retrying] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'retrying');
    expect((await call('DELETE', `/webhooks/${hook.id}`)).status).toBe(204);
    const sent = r.requests.length;
    await new Promise((res) => setTimeout(res, 1000));
    expect(r.requests.length).toBe(sent);
    expect(await stack.api.db.delivery.count({ where: { id: retrying!.id } })).toBe(0);
  });
});

describe('manual retry (SPEC 4.1)', () => {
  it('starts a fresh cycle of 8 attempts on a failed delivery and keeps the earlier attempts', async () => {
    let healthy = false;
    const r = await stack.receiver(() => (healthy ? { status: 200 } : { status: 500 }));
    const hook = await stack.webhook(r);
    await stack.ingest([auditEvent()]);
    const [failed] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed', 20_000);
    expect(failed!.attempt_count).toBe(8);

    healthy = true;
    const retry = await call('POST', `/webhooks/${hook.id}/deliveries/${failed!.id}/retry`);
    expect(retry.status).toBe(202);
    expect(retry.body).toMatchObject({ id: failed!.id, status: 'pending', attempt_count: 8, retryable: false });
    const [done] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    expect(done!.attempt_count).toBe(9);
    expect(done!.attempts.at(-1)!.status_code).toBe(200);

    const again = await call('POST', `/webhooks/${hook.id}/deliveries/${failed!.id}/retry`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
  });

  it('re-sends a batch byte for byte from its stored (compressed) body, under the same webhook-id', async () => {
    let healthy = false;
    const r = await stack.receiver(() => (healthy ? { status: 200 } : { status: 500 }));
    const hook = await stack.webhook(r, { format: 'ndjson', max_events: 50, events: ['policy.created'] });
    await stack.ingest(Array.from({ length: 50 }, () => auditEvent()));
    const [failed] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed', 20_000);
    expect(failed!.event_count).toBe(50);
    const first = r.requests[0]!;
    // Large enough to be stored deflated (packages/delivery/src/render/stored-body.ts).
    expect(first.body.length).toBeGreaterThan(tunables.COMPRESS_FROM_LENGTH);
    const stored = await stack.api.db.delivery.findUniqueOrThrow({
      where: { id: failed!.id },
      select: { bodyEncrypted: true },
    });
    expect(stored.bodyEncrypted!.length).toBeLessThan(first.body.length / 2);

    healthy = true;
    expect((await call('POST', `/webhooks/${hook.id}/deliveries/${failed!.id}/retry`)).status).toBe(202);
    await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    const last = r.requests.at(-1)!;
    expect(last.body).toBe(first.body);
    expect(last.headers['webhook-id']).toBe(first.headers['webhook-id']);
    // Signed afresh over the same bytes (standardwebhooks' verify() parses the body as JSON, which ndjson is not).
    const key = Buffer.from(hook.secret.replace(/^whsec_/, ''), 'base64');
    const expected = createHmac('sha256', key)
      .update(`${last.headers['webhook-id']}.${last.headers['webhook-timestamp']}.${last.body}`)
      .digest('base64');
    expect(String(last.headers['webhook-signature']).split(' ')).toContain(`v1,${expected}`);
  });

  it('a fresh cycle really has 8 attempts of its own', async () => {
    const r = await stack.receiver(() => ({ status: 500 }));
    const hook = await stack.webhook(r);
    await stack.ingest([auditEvent()]);
    const [failed] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed', 20_000);
    await call('POST', `/webhooks/${hook.id}/deliveries/${failed!.id}/retry`);
    const [again] = await stack.deliveries(
      hook.id,
      (items) => items[0]?.status === 'failed' && items[0].attempt_count > 8,
      20_000,
    );
    expect(again!.attempt_count).toBe(16);
  });

  it('is refused for a webhook that is not active, and for unknown or foreign deliveries', async () => {
    const r = await stack.receiver(() => ({ status: 500 }));
    const hook = await stack.webhook(r);
    await stack.ingest([auditEvent()]);
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'retrying');
    expect((await call('POST', `/webhooks/${hook.id}/deliveries/${delivery!.id}/retry`)).status).toBe(409);
    await call('POST', `/webhooks/${hook.id}/disable`);
    await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');
    const refused = await call('POST', `/webhooks/${hook.id}/deliveries/${delivery!.id}/retry`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/disabled/);
    expect(
      (await call('POST', `/webhooks/${hook.id}/deliveries/6a0e0d7c-0000-4000-8000-000000000000/retry`)).status,
    ).toBe(404);
    const stranger = await createTestOrg(stack.api.db);
    const other = await stack.api.call('POST', `/webhooks/${hook.id}/deliveries/${delivery!.id}/retry`, {
      key: stranger.admin,
    });
    expect(other.status).toBe(404);
  });
});

describe('test send (SPEC 4.2)', () => {
  it('sends a signed webhook.test event, waits for the answer and stores nothing', async () => {
    const r = await stack.receiver(() => ({ status: 500, body: 'receiver down' }));
    const hook = await stack.webhook(r, { events: ['policy.created'], condition: 'event.action == "never"' });
    await call('POST', `/webhooks/${hook.id}/disable`);
    const result = await call('POST', `/webhooks/${hook.id}/test`);
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      success: false,
      status_code: 500,
      error: 'http_500',
      duration_ms: expect.any(Number),
      response_snippet: 'receiver down',
    });
    expect(r.requests).toHaveLength(1);
    const body = JSON.parse(r.requests[0]!.body);
    expect(body.type).toBe('webhook.test');
    expect(body.data.payload).toEqual({ webhook_id: hook.id, webhook_name: 'test' });
    expect(
      new StandardWebhook(hook.secret).verify(r.requests[0]!.body, r.requests[0]!.headers as Record<string, string>),
    ).toBeTruthy();

    r.reply(() => ({ status: 200, body: 'fine' }));
    const ok = await call('POST', `/webhooks/${hook.id}/test`);
    expect(ok.body).toMatchObject({ success: true, status_code: 200, response_snippet: 'fine' });

    expect((await call('GET', `/webhooks/${hook.id}/deliveries`)).body.items).toEqual([]);
    expect(await stack.api.db.auditEvent.count({ where: { orgId: stack.org.orgId, action: 'webhook.test' } })).toBe(0);
    const webhook = await call('GET', `/webhooks/${hook.id}`);
    expect(webhook.body.failing_since).toBeNull();
  });

  it('reports a connection failure without a status code', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r);
    await r.close();
    const result = await call('POST', `/webhooks/${hook.id}/test`);
    expect(result.body).toEqual({ success: false, error: 'connection_refused', duration_ms: expect.any(Number) });
  });
});

describe('circuit breaker', () => {
  it('disables a webhook failing for CIRCUIT_BREAKER_SECONDS, with a notification and a webhook.disabled event', async () => {
    const breaker = await startStack({
      CIRCUIT_BREAKER_SECONDS: '1',
      DELIVERY_RETRY_SCHEDULE: '0,0.4,0.4,0.4,0.4,0.4,0.4,0.4',
    });
    const r = await breaker.receiver(() => ({ status: 500 }));
    const call = (method: string, path: string) => breaker.api.call(method, path, { key: breaker.org.admin });
    try {
      const hook = await breaker.webhook(r, { events: ['policy.created'] });
      await breaker.ingest([auditEvent()]);
      const deadline = Date.now() + 15_000;
      let webhook;
      do {
        await new Promise((res) => setTimeout(res, 100));
        webhook = await call('GET', `/webhooks/${hook.id}`);
      } while (webhook.body.status !== 'disabled' && Date.now() < deadline);
      expect(webhook.body).toMatchObject({ status: 'disabled', disabled_reason: 'circuit_breaker' });
      const notes = await call('GET', '/notifications');
      expect(
        notes.body.items.some(
          (n: { webhook_id: string; kind: string }) => n.webhook_id === hook.id && n.kind === 'webhook_disabled',
        ),
      ).toBe(true);
      const event = await breaker.api.db.auditEvent.findFirst({
        where: { orgId: breaker.org.orgId, action: 'webhook.disabled', resourceId: hook.id },
      });
      expect(event!.payload).toEqual({ webhook_id: hook.id, webhook_name: 'test', reason: 'circuit_breaker' });

      const enabled = await call('POST', `/webhooks/${hook.id}/enable`);
      expect(enabled.body).toMatchObject({ status: 'active', disabled_reason: null, failing_since: null });
    } finally {
      await breaker.close();
    }
  });
});

describe('isolation', () => {
  it('an endpoint that times out on every attempt does not hold back deliveries to others', async () => {
    const isolated = await startStack({
      DELIVERY_CONCURRENCY: '4',
      DELIVERY_ORIGIN_CONCURRENCY: '2',
      DELIVERY_TIMEOUT_MS: '8000',
    });
    const slow = await isolated.receiver(() => 'hang');
    const fast = await isolated.receiver();
    try {
      const stuck = await isolated.webhook(slow, { events: ['gateway.tool.error'] });
      const healthy = await isolated.webhook(fast, { events: ['gateway.tool.called'] });
      await isolated.ingest(Array.from({ length: 10 }, () => auditEvent({ action: 'gateway.tool.error' })));
      await slow.waitFor((reqs) => reqs.length >= 2);
      await isolated.ingest(Array.from({ length: 10 }, () => auditEvent({ action: 'gateway.tool.called' })));
      await isolated.deliveries(
        healthy.id,
        (items) => items.length === 10 && items.every((d) => d.status === 'succeeded'),
        7_000,
      );
      // Every healthy delivery finished while the slow endpoint's first attempts were still hanging: with 4 slots,
      // had the 10 slow deliveries taken them all, nothing else could have been sent before they timed out.
      const slowDeliveries = await isolated.api.call('GET', `/webhooks/${stuck.id}/deliveries?limit=100`, {
        key: isolated.org.admin,
      });
      expect(slowDeliveries.body.items.every((d: { attempt_count: number }) => d.attempt_count === 0)).toBe(true);
      expect(slow.inFlight().max).toBe(2);
    } finally {
      await isolated.close();
    }
  });
});
