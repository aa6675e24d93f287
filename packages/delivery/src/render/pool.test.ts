import { DEVELOPMENT_ENCRYPTION_KEY } from '@gatehook/core/config';
import { SecretBox } from '@gatehook/core/encryption';
import type { StoredWebhook } from '@gatehook/core/webhook-config';
import { sampleEvent } from './payload-template';
import { previewRender } from './preview';
import { openBody } from './stored-body';
import { testEvent } from './test-body';
import { RenderPool } from './pool';

// The real render thread, loaded under jest through its own TypeScript loader (thread-entry.cjs).
const box = new SecretBox(DEVELOPMENT_ENCRYPTION_KEY);
const orgId = '5e1d0000-0000-4000-8000-00000000b001';
const now = new Date();
const webhookId = '5e1d0000-0000-4000-8000-00000000b101';
const webhook: StoredWebhook = {
  id: webhookId,
  orgId,
  name: 'pool test',
  status: 'active',
  events: ['*'],
  condition: 'event.action == "policy.created"',
  format: 'single',
  maxEvents: 1,
  template: '{"id":{{json .ID}},"who":{{json .Vars.who}}}',
  urlEncrypted: box.encrypt('https://receiver.example/hook', { column: 'webhooks.url_encrypted', row: webhookId }),
  varsEncrypted: box.encryptMap({ who: 'ops' }, { column: 'webhooks.vars_encrypted', row: webhookId }),
  varNames: ['who'],
  headersEncrypted: null,
  secretEncrypted: box.encrypt('whsec_dGVzdA==', { column: 'webhooks.secret_encrypted', row: webhookId }),
  previousSecretEncrypted: null,
  previousSecretValidUntil: null,
  activeSince: new Date(now.getTime() - 60_000),
  clientCertificateEncrypted: null,
  rateLimitPerSecond: null,
  auth: null,
  authSecretEncrypted: null,
};

describe('RenderPool', () => {
  const pool = new RenderPool({ encryptionKey: DEVELOPMENT_ENCRYPTION_KEY, threads: 2 });
  afterAll(() => pool.close());

  it('plans in its threads with the keys it was given: variables opened there, bodies sealed there', async () => {
    const events = ['policy.created', 'gateway.tool.error'].map((action, i) => ({
      data: { ...sampleEvent(['*'], orgId), action, id: `0193a4f0-0000-7000-8000-00000000000${i}` },
      receivedAt: now,
    }));
    const plan = await pool.plan(orgId, { webhooks: [webhook], events, now, filter: 'live', buffer: true });
    expect(plan.deliveries).toHaveLength(1);
    const [delivery] = plan.deliveries;
    expect(delivery!.body).toBe(`{"id":"${events[0]!.data.id}","who":"ops"}`);
    expect(openBody(box, delivery!.bodyEncrypted!, delivery!.id)).toBe(delivery!.body);
    expect(delivery!.nextRetryAt).toEqual(now);
  });

  it('renders a preview and a test send’s body', async () => {
    const preview = await pool.preview(
      orgId,
      previewRender(orgId, { template: '{"a":{{json .Action}}}', format: 'array', max_events: 10, vars: {} }),
    );
    expect(preview).toEqual({
      ok: true,
      bodies: [{ content_type: 'application/json', body: '[{"a":"anomaly_finding.created"}]' }],
    });
    const body = await pool.testBody(webhook, testEvent(webhook));
    expect(body).toMatchObject({ ok: true, contentType: 'application/json' });
  });
});
