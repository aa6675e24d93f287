import { randomUUID } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { createTestOrg } from '@gatehook/testkit/api';
import { auditEvent, useStack } from '@gatehook/testkit/stack';

// Values whose escaping matters: quotes, backslashes, markup, non-ASCII, control characters and line breaks.
const TOKEN = 'tök"en\\<b>&amp;\n✓\u0001/end';
const ROUTING = "r'out=ing ünï\r\n🎉";
const HEADER_VALUE = 'Bearer h"dr\\<x>&é';
// Printed with printf "%+q": every non-ASCII character as \uXXXX (valid JSON for characters of the BMP).
const QUOTED = 'qü"ö\\<t>&\tß';

/**
 * The forms a value takes in a body: as it is, in JSON, and quoted ASCII-only (printf "%+q"), in either case of hex.
 */
function forms(value: string): string[] {
  const inner = (quoted: string) => quoted.slice(1, -1);
  const asciiOnly = JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return [value, inner(JSON.stringify(value)), inner(asciiOnly), inner(asciiOnly.toUpperCase())];
}

const TEMPLATE =
  '{"id": {{ json .ID }}, "token": {{ json .Vars.TOKEN }}, "quoted": {{ printf "%+q" .Vars.QUOTED }},' +
  ' "text": {{ printf "routing %s for %s" .Vars.ROUTING (escape .ActorDisplayName) | json }}, "actor": {{ json .ActorDisplayName }}}';

const stack = useStack();

const call = (method: string, path: string, key = stack.org.admin) => stack.api.call(method, path, { key });

describe('GET /webhooks/{id}/deliveries/{delivery_id}/request', () => {
  it('shows the request exactly as the receiver got it when nothing needs redacting, and the signature verifies', async () => {
    const receiver = await stack.receiver();
    const hook = await stack.webhook(receiver, { headers: {} });
    await stack.ingest([auditEvent({ actor_display_name: 'Zoë "<&>" \\ \n' })]);
    await receiver.waitFor((reqs) => reqs.length === 1);
    const got = receiver.requests[0]!;
    const deliveryId = got.headers['webhook-id'] as string;
    await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');

    const r = await call('GET', `/webhooks/${hook.id}/deliveries/${deliveryId}/request`);
    expect(r.status).toBe(200);
    expect(r.body.content_type).toBe('application/json');
    expect(r.body.body).toBe(got.body);
    for (const name of ['content-type', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      expect(r.body.headers[name]).toBe(got.headers[name]);
    }
    expect(() => new StandardWebhook(hook.secret).verify(r.body.body, r.body.headers)).not.toThrow();
  });

  for (const format of ['single', 'array', 'ndjson'] as const) {
    it(`never shows a variable or custom header value (${format}, templated, escaped every way)`, async () => {
      const receiver = await stack.receiver();
      const hook = await stack.webhook(receiver, {
        format,
        max_events: format === 'single' ? 1 : 3,
        template: TEMPLATE,
        vars: { TOKEN, ROUTING, QUOTED },
        headers: { 'X-Api-Key': HEADER_VALUE },
      });
      // The header value also reaches the body through an event's field.
      const ids = await stack.ingest([
        auditEvent(),
        auditEvent({ actor_display_name: HEADER_VALUE }),
        auditEvent({ actor_display_name: TOKEN }),
      ]);
      await stack.settle(ids);
      const deliveries = await stack.deliveries(
        hook.id,
        (items) => items.length > 0 && items.every((d) => d.status === 'succeeded'),
      );
      // The receiver did get every value, in the forms looked for below.
      expect(receiver.requests.some((q) => q.body.includes(JSON.stringify(TOKEN).slice(1, -1)))).toBe(true);
      expect(receiver.requests.some((q) => q.body.includes(forms(QUOTED)[2]!))).toBe(true);

      // Every delivery, batched or not, records the version of the values it was rendered with.
      const versions = await stack.api.db.delivery.findMany({
        where: { webhookId: hook.id },
        select: { secretsVersion: true },
      });
      expect(versions.every((d) => typeof d.secretsVersion === 'string' && d.secretsVersion.length > 0)).toBe(true);
      for (const delivery of deliveries) {
        const r = await call('GET', `/webhooks/${hook.id}/deliveries/${delivery.id}/request`);
        expect(r.status).toBe(200);
        const text = JSON.stringify(r.body);
        for (const secret of [TOKEN, ROUTING, QUOTED, HEADER_VALUE]) {
          for (const form of forms(secret)) expect(r.text).not.toContain(form);
          for (const form of forms(secret)) expect(text).not.toContain(form);
        }
        expect(r.body.headers['X-Api-Key']).toBe('[redacted]');
        expect(r.body.body).toContain('[redacted]');
        // The rest is as sent: the same signature headers, and a body of the same shape.
        const got = receiver.requests.find((q) => q.headers['webhook-id'] === delivery.id)!;
        expect(r.body.headers['webhook-signature']).toBe(got.headers['webhook-signature']);
        expect(r.body.headers['webhook-timestamp']).toBe(got.headers['webhook-timestamp']);
        const lines = format === 'ndjson' ? r.body.body.split('\n').filter(Boolean) : [r.body.body];
        for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
        expect(r.body.body.split('\n').length).toBe(got.body.split('\n').length);
      }
    });
  }

  it('signs with the secret that was current when the attempt was made, across a rotation', async () => {
    const receiver = await stack.receiver();
    const hook = await stack.webhook(receiver);
    await stack.ingest([auditEvent()]);
    await receiver.waitFor((reqs) => reqs.length === 1);
    const deliveryId = receiver.requests[0]!.headers['webhook-id'] as string;
    await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    const rotated = await call('POST', `/webhooks/${hook.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const r = await call('GET', `/webhooks/${hook.id}/deliveries/${deliveryId}/request`);
    expect(r.body.headers['webhook-signature']).toBe(receiver.requests[0]!.headers['webhook-signature']);
    expect(() => new StandardWebhook(hook.secret).verify(r.body.body, r.body.headers)).not.toThrow();
  });
});

describe('a body rendered with values that changed since', () => {
  it('is withheld whole, since the old values are no longer stored to be looked for', async () => {
    const receiver = await stack.receiver();
    const hook = await stack.webhook(receiver, {
      template: '{"token": {{ json .Vars.TOKEN }}, "id": {{ json .ID }}}',
      vars: { TOKEN: 'old-token-value' },
    });
    await stack.settle(await stack.ingest([auditEvent()]));
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    const path = `/webhooks/${hook.id}/deliveries/${delivery!.id}/request`;
    expect((await call('GET', path)).body.body).toContain('[redacted]');

    // An edit that leaves the values alone changes nothing.
    expect(
      (
        await stack.api.call('PATCH', `/webhooks/${hook.id}`, {
          key: stack.org.admin,
          body: { name: 'renamed', vars: { TOKEN: '' } },
        })
      ).status,
    ).toBe(200);
    expect((await stack.api.db.webhook.findUniqueOrThrow({ where: { id: hook.id } })).secretsChangedAt).toBeNull();
    expect((await call('GET', path)).body.body).not.toBe('[redacted]');

    expect(
      (
        await stack.api.call('PATCH', `/webhooks/${hook.id}`, {
          key: stack.org.admin,
          body: { vars: { TOKEN: 'new-token-value' } },
        })
      ).status,
    ).toBe(200);
    const r = await call('GET', path);
    expect(r.status).toBe(200);
    expect(r.body.body).toBe('[redacted]');
    expect(r.body.headers['webhook-id']).toBe(delivery!.id);
    expect(r.text).not.toContain('old-token-value');
  });

  it('is withheld when rendered with values since replaced, however long after the change it was stored', async () => {
    const receiver = await stack.receiver();
    const hook = await stack.webhook(receiver, {
      template: '{"token": {{ json .Vars.TOKEN }}}',
      vars: { TOKEN: 'stale-token-value' },
    });
    await stack.settle(await stack.ingest([auditEvent()]));
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    expect(
      (
        await stack.api.call('PATCH', `/webhooks/${hook.id}`, {
          key: stack.org.admin,
          body: { vars: { TOKEN: 'fresh-token-value' } },
        })
      ).status,
    ).toBe(200);
    // The body was stored well after the change (as a worker rendering with a configuration it cached before the
    // change would store it): what it was rendered with decides, not when it was stored.
    await stack.api.db
      .$executeRaw`UPDATE webhooks SET secrets_changed_at = now() - interval '10 minutes' WHERE id = ${hook.id}::uuid`;
    const r = await call('GET', `/webhooks/${hook.id}/deliveries/${delivery!.id}/request`);
    expect(r.status).toBe(200);
    expect(r.body.body).toBe('[redacted]');
    expect(r.text).not.toContain('stale-token-value');
  });

  it('is redacted as usual once rendered well after the change', async () => {
    const receiver = await stack.receiver();
    const hook = await stack.webhook(receiver, {
      template: '{"token": {{ json .Vars.TOKEN }}}',
      vars: { TOKEN: 'a-var-value' },
      headers: { 'X-Key': 'header-value' },
    });
    await stack.api.db
      .$executeRaw`UPDATE webhooks SET secrets_changed_at = now() - interval '10 minutes' WHERE id = ${hook.id}::uuid`;
    await stack.settle(await stack.ingest([auditEvent()]));
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    const r = await call('GET', `/webhooks/${hook.id}/deliveries/${delivery!.id}/request`);
    expect(r.body.body).toBe('{"token": "[redacted]"}');
  });
});

describe('GET /webhooks/{id}/stats over real deliveries', () => {
  it('counts the attempts the engine recorded, a failed one included', async () => {
    const receiver = await stack.receiver((_, index) =>
      index === 0 ? { status: 500, body: 'not yet' } : { status: 200, body: 'ok' },
    );
    const hook = await stack.webhook(receiver);
    await stack.settle(await stack.ingest([auditEvent()]));
    const r = await call('GET', `/webhooks/${hook.id}/stats?hours=2`);
    const sum = (key: string) => r.body.buckets.reduce((n: number, b: Record<string, number>) => n + b[key]!, 0);
    expect([sum('deliveries'), sum('succeeded'), sum('failed'), sum('attempts')]).toEqual([1, 1, 0, 2]);
  });
});

describe('request view errors', () => {
  it('404 for a delivery without a body, one not sent yet, an unknown one and another organisation; 403 without manage_webhooks', async () => {
    const receiver = await stack.receiver();
    const hook = await stack.webhook(receiver);
    const base = { orgId: stack.org.orgId, webhookId: hook.id, eventIds: [randomUUID()], eventCount: 1 };
    const noBody = await stack.api.db.delivery.create({
      data: { ...base, id: randomUUID(), status: 'failed', error: 'template_error: x' },
    });
    const unsent = await stack.api.db.delivery.create({
      data: {
        ...base,
        id: randomUUID(),
        status: 'pending',
        bodyEncrypted: 'never opened',
        nextRetryAt: new Date(Date.now() + 3_600_000),
      },
    });
    for (const id of [noBody.id, unsent.id, randomUUID()]) {
      const r = await call('GET', `/webhooks/${hook.id}/deliveries/${id}/request`);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('not_found');
    }
    expect((await call('GET', `/webhooks/${hook.id}/deliveries/not-a-uuid/request`)).status).toBe(404);
    const stranger = await createTestOrg(stack.api.db);
    expect((await call('GET', `/webhooks/${hook.id}/deliveries/${noBody.id}/request`, stranger.admin)).status).toBe(
      404,
    );
    expect((await call('GET', `/webhooks/${hook.id}/deliveries/${noBody.id}/request`, stack.org.nobody)).status).toBe(
      403,
    );
    expect((await call('GET', `/webhooks/${hook.id}/deliveries/${noBody.id}/request`, stack.org.member)).status).toBe(
      404,
    );
  });
});
