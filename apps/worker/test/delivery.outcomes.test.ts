import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { generateEncryptionKey, SecretBox } from '@gatehook/core/encryption';
import { auditEvent, useStack } from '@gatehook/testkit/stack';
import { until } from '@gatehook/testkit/until';

const stack = useStack();

describe('a delivered event', () => {
  it('is a signed Standard Webhooks POST with reserved headers first and the envelope as body', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, {
      events: ['policy.created'],
      headers: { 'X-Team': 'sec', Authorization: 'Bearer abc' },
    });
    const [eventId] = await stack.ingest([
      auditEvent({ created_at: '2026-11-21T10:00:00.123Z', context: { ip: '10.0.0.1' } }),
    ]);
    await r.waitFor((reqs) => reqs.length === 1);
    const req = r.requests[0]!;

    expect(req.method).toBe('POST');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toMatch(/^Gatehook-Webhooks\/\d+\.\d+\.\d+$/);
    // Reserved headers first (their order among themselves is the HTTP client's), custom headers after.
    expect([...req.headerOrder.slice(0, 5)].sort()).toEqual([
      'content-type',
      'user-agent',
      'webhook-id',
      'webhook-signature',
      'webhook-timestamp',
    ]);
    expect(req.headerOrder.indexOf('x-team')).toBeGreaterThan(req.headerOrder.indexOf('webhook-signature'));
    expect(req.headers['x-team']).toBe('sec');
    expect(req.headers.authorization).toBe('Bearer abc');
    expect(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);

    const headers = req.headers as Record<string, string>;
    expect(new StandardWebhook(hook.secret).verify(req.body, headers)).toBeTruthy();
    expect(
      new SvixWebhook(hook.secret).verify(req.body, {
        'svix-id': headers['webhook-id']!,
        'svix-timestamp': headers['webhook-timestamp']!,
        'svix-signature': headers['webhook-signature']!,
      }),
    ).toBeTruthy();
    expect(() => new StandardWebhook(hook.secret).verify(`${req.body} `, headers)).toThrow();

    expect(JSON.parse(req.body)).toEqual({
      type: 'policy.created',
      timestamp: '2026-11-21T10:00:00.123Z',
      data: {
        id: eventId,
        org_id: stack.org.orgId,
        action: 'policy.created',
        actor_type: 'user',
        actor_id: 'u-1',
        actor_display_name: 'Ada',
        resource_type: 'policy',
        resource_id: 'p-1',
        resource_display_name: 'Default policy',
        resources: {},
        context: { ip: '10.0.0.1' },
        changes: [],
        payload: { policy_name: 'Default policy', effect: 'allow' },
        created_at: '2026-11-21T10:00:00.123Z',
      },
    });

    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    expect(delivery!.id).toBe(req.headers['webhook-id']);
    expect(delivery).toMatchObject({ event_count: 1, attempt_count: 1, retryable: false });
    expect(delivery!.next_retry_at).toBeUndefined();
    expect(delivery!.attempts).toEqual([
      { at: expect.any(String), status_code: 200, error: '', duration_ms: expect.any(Number), response_snippet: 'ok' },
    ]);
  });

  it('goes only to webhooks subscribed to its action', async () => {
    const subscribed = await stack.receiver();
    const other = await stack.receiver();
    await stack.webhook(subscribed, { events: ['anomaly_finding.created'] });
    await stack.webhook(other, { events: ['tag.created'] });
    await stack.settle(
      await stack.ingest([auditEvent({ action: 'anomaly_finding.created', payload: { severity: 'high' } })]),
    );
    expect(subscribed.requests).toHaveLength(1);
    expect(other.requests).toHaveLength(0);
  });

  it('is delivered once for an event id ingested twice', async () => {
    const r = await stack.receiver();
    await stack.webhook(r, { events: ['tag.created'] });
    const event = auditEvent({ id: '0193a4f0-0000-7000-8000-00000000abcd', action: 'tag.created' });
    await stack.ingest([event]);
    await stack.ingest([event, event]);
    await stack.settle([event.id as string]);
    expect(r.requests).toHaveLength(1);
  });
});

describe('responses (SPEC 6.6)', () => {
  it('retries a 500 and then succeeds; the failure streak starts and ends', async () => {
    const r = await stack.receiver((_req, i) => (i === 0 ? { status: 500, body: 'boom' } : { status: 204 }));
    const hook = await stack.webhook(r);
    await stack.ingest([auditEvent()]);
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    expect(delivery!.attempts.map((a) => [a.status_code, a.error, a.response_snippet])).toEqual([
      [500, 'http_500', 'boom'],
      [204, '', ''],
    ]);
    expect(r.requests[0]!.headers['webhook-id']).toBe(r.requests[1]!.headers['webhook-id']);
    const webhook = await stack.api.call('GET', `/webhooks/${hook.id}`, { key: stack.org.admin });
    expect(webhook.body.failing_since).toBeNull();
  });

  it('marks the webhook failing while a streak lasts', async () => {
    const r = await stack.receiver(() => ({ status: 503 }));
    const hook = await stack.webhook(r);
    await stack.ingest([auditEvent()]);
    await stack.deliveries(hook.id, (items) => items[0]?.status === 'retrying');
    const webhook = await stack.api.call('GET', `/webhooks/${hook.id}`, { key: stack.org.admin });
    expect(webhook.body.failing_since).not.toBeNull();
  });

  it('fails after 8 attempts, keeping every attempt oldest first', async () => {
    const r = await stack.receiver(() => ({ status: 502 }));
    const hook = await stack.webhook(r);
    await stack.ingest([auditEvent()]);
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed', 20_000);
    expect(delivery!.attempt_count).toBe(8);
    expect(delivery!.attempts).toHaveLength(8);
    const times = delivery!.attempts.map((a) => Date.parse(a.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(delivery!.retryable).toBe(true);
    expect(delivery!.next_retry_at).toBeUndefined();
    const detail = await stack.api.call('GET', `/webhooks/${hook.id}/deliveries/${delivery!.id}`, {
      key: stack.org.admin,
    });
    expect(detail.body.error).toBe('attempts_exhausted');
  });

  it('a 410 fails at once and disables the webhook (reason gone) with a notification and a webhook.disabled event', async () => {
    const gone = await stack.receiver(() => ({ status: 410 }));
    const watcher = await stack.receiver();
    const hook = await stack.webhook(gone, { events: ['gateway.tool.error'] });
    const watch = await stack.webhook(watcher, { events: ['webhook.disabled'] });
    await stack.ingest([auditEvent({ action: 'gateway.tool.error', payload: { tool_key: 'x' } })]);
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');
    expect(delivery!.attempt_count).toBe(1);
    // The attempt's record commits first and the disable follows it (AttemptRunner.flush): wait for the second.
    const webhook = await until(
      () => stack.api.call('GET', `/webhooks/${hook.id}`, { key: stack.org.admin }),
      (w) => w.body.status !== 'active',
    );
    expect(webhook.body).toMatchObject({ status: 'disabled', disabled_reason: 'gone' });

    const notes = await stack.api.call('GET', '/notifications', { key: stack.org.admin });
    expect(notes.body.items).toEqual(
      expect.arrayContaining([expect.objectContaining({ kind: 'webhook_disabled', webhook_id: hook.id })]),
    );

    await watcher.waitFor((reqs) => reqs.some((q) => JSON.parse(q.body).data.payload.webhook_id === hook.id));
    const disabledEvent = JSON.parse(
      watcher.requests.find((q) => JSON.parse(q.body).data.payload.webhook_id === hook.id)!.body,
    );
    expect(disabledEvent.type).toBe('webhook.disabled');
    expect(disabledEvent.data.payload).toEqual({ webhook_id: hook.id, webhook_name: 'test', reason: 'gone' });
    // Only the webhook that answered 410 is disabled.
    expect((await stack.api.call('GET', `/webhooks/${watch.id}`, { key: stack.org.admin })).body.status).toBe('active');
  });

  it('a 429 waits for Retry-After without consuming an attempt or starting a streak', async () => {
    const r = await stack.receiver((_req, i) =>
      i < 2 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 },
    );
    const hook = await stack.webhook(r);
    await stack.ingest([auditEvent()]);
    const waiting = await stack.deliveries(hook.id, (items) => items[0]?.attempt_count === 1);
    expect(waiting[0]!.status).toBe('pending');
    const webhook = await stack.api.call('GET', `/webhooks/${hook.id}`, { key: stack.org.admin });
    expect(webhook.body.failing_since).toBeNull();
    const nextAt = Date.parse(waiting[0]!.next_retry_at!);
    expect(nextAt - Date.parse(waiting[0]!.attempts[0]!.at)).toBeGreaterThanOrEqual(900);

    const [done] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    expect(done!.attempts.map((a) => a.status_code)).toEqual([429, 429, 200]);
    expect(r.requests[1]!.at - r.requests[0]!.at).toBeGreaterThanOrEqual(900);
  });

  it('429s never count towards the 8 attempts', async () => {
    // Alternating 429 and 500: 8 failures need 15 requests.
    const r = await stack.receiver((_req, i) =>
      i % 2 === 0 ? { status: 500 } : { status: 429, headers: { 'retry-after': '0' } },
    );
    const hook = await stack.webhook(r);
    await stack.ingest([auditEvent()]);
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed', 25_000);
    expect(delivery!.attempts.filter((a) => a.status_code === 500)).toHaveLength(8);
    expect(delivery!.attempts.filter((a) => a.status_code === 429)).toHaveLength(7);
    expect(delivery!.attempt_count).toBe(15);
  });

  it.each([
    ['a redirect', { status: 302, headers: { location: 'https://127.0.0.1:1/elsewhere' } }, 'redirect_refused', 302],
    ['a 400', { status: 400 }, 'http_400', 400],
    ['a 404', { status: 404 }, 'http_404', 404],
  ])('%s is recorded and retried', async (_name, reply, error, status) => {
    const r = await stack.receiver((_req, i) => (i === 0 ? reply : { status: 200 }));
    const hook = await stack.webhook(r);
    await stack.ingest([auditEvent()]);
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    expect(delivery!.attempts[0]).toMatchObject({ status_code: status, error });
  });

  it('a timeout is recorded with status 0 and retried', async () => {
    const r = await stack.receiver((_req, i) => (i === 0 ? 'hang' : { status: 200 }));
    const hook = await stack.webhook(r);
    await stack.ingest([auditEvent()]);
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    expect(delivery!.attempts[0]).toMatchObject({ status_code: 0, error: 'timeout' });
    expect(delivery!.attempts[0]!.duration_ms).toBeGreaterThanOrEqual(1900);
  });

  it('a refused connection is recorded and retried', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, {}, '/hook');
    await r.close();
    await stack.ingest([auditEvent()]);
    const [delivery] = await stack.deliveries(hook.id, (items) => (items[0]?.attempt_count ?? 0) >= 2);
    expect(delivery!.attempts[0]).toMatchObject({ status_code: 0, error: 'connection_refused' });
  });
});

describe('unreadable secrets', () => {
  it('a secret that the configured keys cannot decrypt fails the delivery with a clear error, nothing sent', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r);
    const foreignKey = new SecretBox(generateEncryptionKey());
    await stack.writeWebhookRow(hook.id, {
      secretEncrypted: foreignKey.encrypt('whsec_x', { column: 'webhooks.secret_encrypted', row: hook.id }),
    });
    await stack.ingest([auditEvent()]);
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');
    const detail = await stack.api.call('GET', `/webhooks/${hook.id}/deliveries/${delivery!.id}`, {
      key: stack.org.admin,
    });
    expect(detail.body.error).toMatch(/^secret_unreadable/);
    expect(r.requests).toHaveLength(0);
  });
});

describe('secret rotation', () => {
  it('signs with both secrets during the overlap, newest first, each verifying alone', async () => {
    const r = await stack.receiver();
    // Only the ingested event: a `*` webhook would also receive the rotation's own audit event.
    const hook = await stack.webhook(r, { events: ['policy.created'] });
    const rotated = await stack.api.call('POST', `/webhooks/${hook.id}/rotate-secret`, { key: stack.org.admin });
    await stack.ingest([auditEvent()]);
    await r.waitFor((reqs) => reqs.length === 1);
    const headers = r.requests[0]!.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(headers['webhook-signature']!.split(' ').every((s) => s.startsWith('v1,'))).toBe(true);
    expect(new StandardWebhook(rotated.body.secret).verify(r.requests[0]!.body, headers)).toBeTruthy();
    expect(new StandardWebhook(hook.secret).verify(r.requests[0]!.body, headers)).toBeTruthy();
    const newest = new StandardWebhook(rotated.body.secret).sign(
      headers['webhook-id']!,
      new Date(Number(headers['webhook-timestamp']) * 1000),
      r.requests[0]!.body,
    );
    expect(headers['webhook-signature']!.split(' ')[0]).toBe(newest);
  });
});
