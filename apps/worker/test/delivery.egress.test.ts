import { createClientCa } from '@gatehook/testkit/pki';
import { startProxy, type TestProxy } from '@gatehook/testkit/proxy';
import { auditEvent, startStack, type Stack } from '@gatehook/testkit/stack';
import { until } from '@gatehook/testkit/until';

// CONTRACT 18 end to end: the real API and worker engine, a real CONNECT proxy, real receivers.

describe('through EGRESS_PROXY_URL', () => {
  let stack: Stack;
  let proxy: TestProxy;

  beforeAll(async () => {
    proxy = await startProxy({ credentials: { user: 'gatehook', password: 's3cret' } });
    stack = await startStack({ EGRESS_PROXY_URL: proxy.url });
  });
  afterAll(async () => {
    await stack.close();
    await proxy.close();
  });

  it('sends every delivery and test send through the proxy, which is asked only for the checked receiver address', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r);
    const ids = await stack.ingest([auditEvent(), auditEvent(), auditEvent()]);
    await stack.settle(ids);
    expect(r.requests).toHaveLength(3);
    const deliveryTunnels = proxy.requests.length;
    expect(deliveryTunnels).toBeGreaterThanOrEqual(1);

    const tested = await stack.api.call('POST', `/webhooks/${hook.id}/test`, { key: stack.org.admin });
    expect(tested.body).toMatchObject({ success: true, status_code: 200 });
    expect(r.requests).toHaveLength(4);
    // The API's client has tunnels of its own: the test send opened one.
    expect(proxy.requests.length).toBeGreaterThan(deliveryTunnels);

    const port = new URL(r.url()).port;
    for (const request of proxy.requests) {
      expect(request).toMatchObject({
        target: `127.0.0.1:${port}`,
        status: 200,
        authorization: `Basic ${Buffer.from('gatehook:s3cret').toString('base64')}`,
      });
    }
  });
});

describe('a proxy that is down', () => {
  let stack: Stack;

  beforeAll(async () => {
    const dead = await startProxy();
    await dead.close();
    // A breaker of 1 s that a failing endpoint would trip within the 8 attempts of the test schedule.
    stack = await startStack({
      EGRESS_PROXY_URL: dead.url,
      CIRCUIT_BREAKER_SECONDS: '1',
      DELIVERY_RETRY_SCHEDULE: '0,0.3,0.3,0.3,0.3,0.3,0.3,0.3',
    });
  });
  afterAll(() => stack.close());

  it('records proxy_error attempts, retried on the schedule, and never starts the failure streak or trips the breaker', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r);
    const ids = await stack.ingest([auditEvent()]);
    await stack.settle(ids, 30_000);
    const [delivery] = await stack.deliveries(hook.id, (items) => items.length === 1 && items[0]!.status === 'failed');
    expect(delivery!.attempt_count).toBe(8);
    expect(new Set(delivery!.attempts.map((a) => a.error))).toEqual(new Set(['proxy_error']));
    expect(r.requests).toHaveLength(0);
    const webhook = await stack.api.call('GET', `/webhooks/${hook.id}`, { key: stack.org.admin });
    expect(webhook.body).toMatchObject({ status: 'active', disabled_reason: null, failing_since: null });
    expect(await stack.api.db.notification.count({ where: { webhookId: hook.id } })).toBe(0);
  });
});

describe('a receiver that refuses behind a working proxy', () => {
  let stack: Stack;
  let proxy: TestProxy;

  beforeAll(async () => {
    proxy = await startProxy();
    stack = await startStack({
      EGRESS_PROXY_URL: proxy.url,
      CIRCUIT_BREAKER_SECONDS: '1',
      DELIVERY_RETRY_SCHEDULE: '0,0.3,0.3,0.3,0.3,0.3,0.3,0.3',
    });
  });
  afterAll(async () => {
    await stack.close();
    await proxy.close();
  });

  it("is blamed on the receiver: the proxy's 502 is connection_refused, the streak starts and the breaker trips", async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { events: ['policy.created'] });
    await r.close();
    await stack.ingest([auditEvent()]);
    const [delivery] = await stack.deliveries(hook.id, (items) => (items[0]?.attempt_count ?? 0) >= 1);
    expect(delivery!.attempts[0]).toMatchObject({ status_code: 0, error: 'connection_refused' });
    expect(proxy.requests.some((request) => request.status === 502)).toBe(true);
    const webhook = await until(
      async () => (await stack.api.call('GET', `/webhooks/${hook.id}`, { key: stack.org.admin })).body,
      (body) => body.status === 'disabled',
      15_000,
    );
    expect(webhook).toMatchObject({ status: 'disabled', disabled_reason: 'circuit_breaker' });
  });
});

describe('client_certificate (mTLS)', () => {
  let stack: Stack;
  const trusted = createClientCa('receiver trusts this');
  const strange = createClientCa('receiver does not know this');

  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it('presents the webhook certificate: the receiver accepts the right one and refuses none or a wrong one', async () => {
    const r = await stack.receiver(undefined, { clientCa: trusted.caPem });
    const right = trusted.issue({ commonName: 'right' });
    const wrong = strange.issue({ commonName: 'wrong' });
    const withRight = await stack.webhook(
      r,
      { name: 'right', client_certificate: { cert: right.certPem, key: right.keyPem } },
      '/right',
    );
    const withWrong = await stack.webhook(
      r,
      { name: 'wrong', client_certificate: { cert: wrong.certPem, key: wrong.keyPem } },
      '/wrong',
    );
    const without = await stack.webhook(r, { name: 'none' }, '/none');
    await stack.ingest([auditEvent()]);

    await stack.deliveries(withRight.id, (items) => items[0]?.status === 'succeeded');
    for (const id of [withWrong.id, without.id]) {
      const [failing] = await stack.deliveries(
        id,
        (items) => items[0]?.status === 'retrying' || items[0]?.status === 'failed',
      );
      expect(failing!.attempts[0]!.status_code).toBe(0);
      expect(['tls_error', 'connection_reset']).toContain(failing!.attempts[0]!.error);
    }
    // Only the webhook with the right certificate got through (it also receives the other webhooks' webhook.created).
    expect(new Set(r.requests.map((q) => q.path))).toEqual(new Set(['/right']));

    // The test send presents it too.
    const tested = await stack.api.call('POST', `/webhooks/${withRight.id}/test`, { key: stack.org.admin });
    expect(tested.body).toMatchObject({ success: true, status_code: 200 });
  });
});
