import { auditEvent, useStack } from '@gatehook/testkit/stack';
import { until } from '@gatehook/testkit/until';

const stack = useStack();

const call = (method: string, path: string, body?: unknown) =>
  stack.api.call(method, path, { key: stack.org.admin, body });
const base = { name: 'hook', url: 'https://127.0.0.1:9/hook', events: ['anomaly_finding.created'] };
const finding = (payload: Record<string, unknown>, overrides: Record<string, unknown> = {}) =>
  auditEvent({ action: 'anomaly_finding.created', payload, ...overrides });

describe('save-time validation (SPEC 6.2.8, 6.3.4, 7.1)', () => {
  it.each([
    ['a syntax error', { condition: 'event.action ==' }, 'condition', /./],
    ['a non-boolean condition', { condition: 'event.action' }, 'condition', /bool/i],
    [
      'a payload field no subscribed event carries',
      { events: ['gateway.tool.error'], condition: 'event.payload.severity == "high"' },
      'condition',
      /payload field "severity" is carried by none of the subscribed events/,
    ],
    ['a backtracking-only regex', { condition: 'event.actor.name.matches("(a)\\\\1")' }, 'condition', /./],
    ['a template that does not parse', { template: '{"a": {{ .Action }' }, 'template', /template: template:1/],
    ['a template rendering invalid JSON', { template: '{"a": {{ .Action }}}' }, 'template', /not valid JSON/],
    [
      'a template with duplicate member names',
      { template: '{"a": 1, "a": {{ json .Action }}}' },
      'template',
      /duplicate member name at position \d+/,
    ],
    [
      'a template using an unset variable',
      { template: '{"key": {{ json .Vars.ROUTING_KEY }}}' },
      'template',
      /unset variable \.Vars\.ROUTING_KEY/,
    ],
    [
      'a template calling an unknown function',
      { template: '{"a": {{ upper .Action | json }}}' },
      'template',
      /function "upper" not defined/,
    ],
  ])('rejects %s', async (_name, fields, path, message) => {
    const r = await call('POST', '/webhooks', { ...base, ...fields });
    expect(r.status).toBe(422);
    const detail = r.body.error.details.find((d: { path: string }) => d.path === path);
    expect(detail.message).toMatch(message);
  });

  it('accepts a Slack-style template with variables and a three-clause condition', async () => {
    const r = await call('POST', '/webhooks', {
      ...base,
      vars: { CHANNEL: '#alerts' },
      condition:
        'event.payload.severity in ["high", "critical"] && event.payload.score > 0.5 && event.actor.type == "user"',
      template:
        '{"channel": {{ json .Vars.CHANNEL }}, "text": {{ printf "%s: %s (%v)" .String (escape .ActorDisplayName) .Payload.score | json }}}',
    });
    expect(r.status).toBe(201);
  });

  it('narrowing events re-checks the stored condition; removing a used variable re-checks the template', async () => {
    const created = await call('POST', '/webhooks', {
      ...base,
      events: ['anomaly_finding.created', 'gateway.tool.error'],
      condition: 'has(event.payload.severity)',
      vars: { KEY: 'k' },
      template: '{"k": {{ json .Vars.KEY }}}',
    });
    expect(created.status).toBe(201);
    const narrowed = await call('PATCH', `/webhooks/${created.body.id}`, { events: ['gateway.tool.error'] });
    expect(narrowed.status).toBe(422);
    expect(narrowed.body.error.details).toEqual([
      {
        path: 'condition',
        message: expect.stringContaining('payload field "severity" is carried by none of the subscribed events'),
      },
    ]);
    const dropped = await call('PATCH', `/webhooks/${created.body.id}`, { vars: {} });
    expect(dropped.status).toBe(422);
    expect(dropped.body.error.details[0].path).toBe('template');
    const still = await call('GET', `/webhooks/${created.body.id}`);
    expect(still.body).toMatchObject({ events: ['anomaly_finding.created', 'gateway.tool.error'], vars: { KEY: '' } });
  });
});

describe('conditions at delivery', () => {
  it('delivers matching events and skips the rest, including those whose evaluation errors', async () => {
    const r = await stack.receiver();
    await stack.webhook(r, {
      events: ['anomaly_finding.created'],
      condition: 'event.payload.severity == "high" && event.payload.score > 5',
    });
    const ids = await stack.ingest([
      finding({ severity: 'high', score: 9 }),
      finding({ severity: 'low', score: 9 }),
      finding({ score: 9 }), // no severity: evaluation error, skipped
      finding({ severity: 'high', score: 7.5 }),
    ]);
    const [high, , , alsoHigh] = ids;
    await stack.settle(ids);
    expect(r.requests.map((q) => JSON.parse(q.body).data.id).sort()).toEqual([high, alsoHigh].sort());
  });

  it('a stored condition that no longer compiles matches nothing (it does not fall back to everything)', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, {
      events: ['anomaly_finding.created'],
      condition: 'event.payload.severity == "high"',
    });
    await stack.writeWebhookRow(hook.id, { condition: 'event.payload.severity ==' });
    await stack.settle(await stack.ingest([finding({ severity: 'high' }), finding({ severity: 'low' })]));
    expect(r.requests).toHaveLength(0);
    // Fanned out (settled), matching nothing: neither a delivery nor a pending fan-out is left.
    expect(await stack.api.db.delivery.count({ where: { webhookId: hook.id } })).toBe(0);
  });

  it('a catastrophic regex on a long name does not stall the worker', async () => {
    const r = await stack.receiver();
    await stack.webhook(r, { events: ['anomaly_finding.created'], condition: 'event.actor.name.matches("(a+)+$")' });
    const [, second] = await stack.ingest([
      finding({ severity: 'low' }, { actor_display_name: `${'a'.repeat(900)}!` }),
      finding({ severity: 'low' }, { actor_display_name: 'aaaa' }),
    ]);
    await r.waitFor((reqs) => reqs.length === 1, 10_000);
    expect(JSON.parse(r.requests[0]!.body).data.id).toBe(second);
  });
});

describe('templates at delivery (SPEC 6.3.5, 6.3.6)', () => {
  const scoreTemplate =
    '{"summary": {{ printf "%s by %s" .String .ActorDisplayName | json }}, "score": {{ printf "%.1f" .Payload.score }}}';

  it('renders each event through the template, and composes with the array format', async () => {
    const r = await stack.receiver();
    await stack.webhook(r, {
      events: ['anomaly_finding.created'],
      format: 'array',
      max_events: 10,
      template: scoreTemplate,
    });
    await stack.ingest([finding({ score: 2 }), finding({ score: 3.25 })]);
    await r.waitFor((reqs) => reqs.length === 1);
    const body = JSON.parse(r.requests[0]!.body);
    expect(body).toHaveLength(2);
    expect(body.map((e: { score: number }) => e.score).sort()).toEqual([2, 3.2]);
    expect(body[0].summary).toBe('Anomaly Finding Created by Ada');
  });

  it('an event that does not render becomes its own failed delivery; the rest of the batch goes out', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, {
      events: ['anomaly_finding.created'],
      format: 'array',
      max_events: 10,
      template: scoreTemplate,
    });
    const [good, bad] = await stack.ingest([finding({ score: 1 }), finding({ score: 'not a number' })]);
    await r.waitFor((reqs) => reqs.length === 1);
    expect(JSON.parse(r.requests[0]!.body)).toHaveLength(1);
    const sentDelivery = r.requests[0]!.headers['webhook-id'];
    const deliveries = await stack.deliveries(
      hook.id,
      (items) => items.length === 2 && items.some((d) => d.status === 'succeeded'),
    );
    const failed = deliveries.find((d) => d.status === 'failed')!;
    expect(failed).toMatchObject({ event_count: 1, attempt_count: 0, retryable: false });
    const detail = await call('GET', `/webhooks/${hook.id}/deliveries/${failed.id}`);
    expect(detail.body.event_ids).toEqual([bad]);
    expect(detail.body.error).toMatch(/^template_error: the rendered body is not valid JSON/);
    expect((await call('POST', `/webhooks/${hook.id}/deliveries/${failed.id}/retry`)).status).toBe(409);
    const sent = await call('GET', `/webhooks/${hook.id}/deliveries/${sentDelivery}`);
    expect(sent.body.event_ids).toEqual([good]);
    expect((await call('GET', `/webhooks/${hook.id}`)).body.status).toBe('active');
  });

  it('a batch in which no event renders disables the webhook (template_error) with a notification', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { events: ['anomaly_finding.created'], template: scoreTemplate });
    await stack.ingest([finding({ score: 'nope' })]);
    await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');
    // The disable follows the commit of the failed delivery.
    const webhook = await until(
      () => call('GET', `/webhooks/${hook.id}`),
      (w) => w.body.status !== 'active',
    );
    expect(webhook.body).toMatchObject({ status: 'disabled', disabled_reason: 'template_error' });
    const notes = await call('GET', '/notifications');
    expect(notes.body.items.some((n: { webhook_id: string }) => n.webhook_id === hook.id)).toBe(true);
    const event = await stack.api.db.auditEvent.findFirst({
      where: { orgId: stack.org.orgId, action: 'webhook.disabled', resourceId: hook.id },
    });
    expect(event!.payload).toMatchObject({ reason: 'template_error' });
    expect(r.requests).toHaveLength(0);
  });

  it('a stored template that no longer parses disables the webhook on its next event', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { events: ['anomaly_finding.created'], template: '{"a": 1}' });
    await stack.writeWebhookRow(hook.id, { template: '{"a": {{ .Action ' });
    await stack.ingest([finding({ score: 1 })]);
    const [failed] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');
    const detail = await call('GET', `/webhooks/${hook.id}/deliveries/${failed!.id}`);
    expect(detail.body.error).toMatch(/no longer parses/);
    expect(
      (
        await until(
          () => call('GET', `/webhooks/${hook.id}`),
          (w) => w.body.status !== 'active',
        )
      ).body.disabled_reason,
    ).toBe('template_error');
  });

  it('test send renders through the template and reports a template failure without sending', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, {
      events: ['anomaly_finding.created'],
      template: '{"test": {{ json .Payload.webhook_name }}, "by": {{ json .ActorDisplayName }}}',
    });
    const ok = await call('POST', `/webhooks/${hook.id}/test`);
    expect(ok.body.success).toBe(true);
    expect(JSON.parse(r.requests[0]!.body)).toEqual({ test: 'test', by: 'Gatehook' });

    await stack.writeWebhookRow(hook.id, { template: '{"a": {{ .Nope.x }}}' });
    const failed = await call('POST', `/webhooks/${hook.id}/test`);
    expect(failed.body).toMatchObject({ success: false, error: expect.stringMatching(/^template_error/) });
    expect(failed.body.status_code).toBeUndefined();
    expect(r.requests).toHaveLength(1);
  });
});
