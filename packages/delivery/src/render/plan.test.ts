import { DEVELOPMENT_ENCRYPTION_KEY } from '@gatehook/core/config';
import { SecretBox } from '@gatehook/core/encryption';
import type { StoredWebhook } from '@gatehook/core/webhook-config';
import { openBody } from './stored-body';
import { sampleEvent } from './payload-template';
import { toLiveWebhook } from '../webhook-configs';
import {
  planDeliveries,
  planSlice,
  emptyPlan,
  mayChoose,
  mergePlan,
  type PlanEvent,
  type PlanInput,
  type PlanProgress,
} from './plan';

const box = new SecretBox(DEVELOPMENT_ENCRYPTION_KEY);
const orgId = '5e1d0000-0000-4000-8000-00000000a001';
const now = new Date('2026-01-02T00:00:00.000Z');

function storedWebhook(overrides: Partial<StoredWebhook> = {}): StoredWebhook {
  const id = overrides.id ?? `5e1d0000-0000-4000-8000-${String(Math.floor(Math.random() * 1e12)).padStart(12, '0')}`;
  return {
    id,
    orgId,
    name: 'plan test',
    status: 'active',
    events: ['*'],
    condition: '',
    format: 'single',
    maxEvents: 1,
    template: '',
    urlEncrypted: box.encrypt('https://receiver.example/hook', { column: 'webhooks.url_encrypted', row: id }),
    varsEncrypted: null,
    varNames: [],
    headersEncrypted: null,
    secretEncrypted: box.encrypt('whsec_dGVzdA==', { column: 'webhooks.secret_encrypted', row: id }),
    previousSecretEncrypted: null,
    previousSecretValidUntil: null,
    activeSince: new Date('2026-01-01T00:00:00.000Z'),
    clientCertificateEncrypted: null,
    rateLimitPerSecond: null,
    auth: null,
    authSecretEncrypted: null,
    ...overrides,
  };
}

function events(count: number, receivedAt = now): PlanEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    data: {
      ...sampleEvent(['*'], orgId),
      id: `0193a4f0-0000-7000-8000-${String(i).padStart(12, '0')}`,
      action: i % 2 ? 'policy.created' : 'gateway.tool.error',
    },
    receivedAt,
  }));
}

const deps = { box, live: (stored: StoredWebhook) => toLiveWebhook(stored, box) };

describe('planDeliveries', () => {
  it('chooses by subscription, activeSince and condition, renders, packs and seals', () => {
    const single = storedWebhook({ events: ['policy.created'] });
    const templated = storedWebhook({
      template: '{"id":{{json .ID}}}',
      condition: 'event.action == "gateway.tool.error"',
    });
    const late = storedWebhook({ activeSince: now });
    const input: PlanInput = {
      webhooks: [single, templated, late],
      events: events(4),
      now,
      filter: 'live',
      buffer: true,
    };
    const plan = planDeliveries(input, deps);
    const of = (w: StoredWebhook) => plan.deliveries.filter((d) => d.webhookId === w.id);
    expect(of(single)).toHaveLength(2);
    expect(of(templated).map((d) => d.body)).toEqual([
      `{"id":"${input.events[0]!.data.id}"}`,
      `{"id":"${input.events[2]!.data.id}"}`,
    ]);
    expect(of(late)).toHaveLength(0);
    for (const d of plan.deliveries) expect(openBody(box, d.bodyEncrypted!, d.id)).toBe(d.body);
    expect(plan.broken).toEqual([]);
  });

  it('sends a batching webhook’s full batches and buffers the rest when asked to, and packs everything otherwise', () => {
    const batching = storedWebhook({ format: 'array', maxEvents: 2 });
    const buffered = planDeliveries(
      { webhooks: [batching], events: events(5), now, filter: 'live', buffer: true },
      deps,
    );
    expect(buffered.deliveries.map((d) => d.eventIds.length)).toEqual([2, 2]);
    expect(buffered.batchItems).toHaveLength(1);
    expect(buffered.batched).toEqual([[batching.id, { count: 1, maxEvents: 2 }]]);
    const flushed = planDeliveries(
      { webhooks: [batching], events: events(5), now, filter: 'all', buffer: false },
      deps,
    );
    expect(flushed.deliveries.map((d) => d.eventIds.length)).toEqual([2, 2, 1]);
    expect(flushed.batchItems).toEqual([]);
  });

  it('fails each event that does not render on its own, and names a webhook none of whose events rendered', () => {
    const broken = storedWebhook({ template: '{"a":{{.Payload.missing.deeper}}}' });
    const plan = planDeliveries({ webhooks: [broken], events: events(2), now, filter: 'replay', buffer: false }, deps);
    expect(plan.deliveries.map((d) => d.status)).toEqual(['failed', 'failed']);
    expect(plan.deliveries[0]!.error).toMatch(/^template_error: /);
    expect(plan.broken).toEqual([broken.id]);
  });
});

describe('planSlice', () => {
  it('stops between two units of work once its time is up, and the slices add up to the whole plan', () => {
    const webhooks = [
      storedWebhook({ format: 'ndjson', maxEvents: 3 }),
      storedWebhook({ template: '{"id":{{json .ID}}}' }),
    ];
    const input: PlanInput = { webhooks, events: events(7), now, filter: 'replay', buffer: false };
    const whole = planDeliveries(input, deps);
    // A clock always past `until`: each slice does exactly one unit (one event matched or rendered).
    const sliced = emptyPlan();
    let progress: PlanProgress | null = null;
    let slices = 0;
    do {
      const slice = planSlice(structuredClone(input), structuredClone(progress), { ...deps, until: 0, clock: () => 1 });
      mergePlan(sliced, slice.plan);
      progress = slice.progress;
      slices += 1;
    } while (progress !== null);
    expect(slices).toBe(2 * 7 * 2); // match and render each event, for each webhook
    const view = (p: typeof whole) => p.deliveries.map((d) => [d.webhookId, d.eventIds, d.body, d.status]);
    expect(view(sliced)).toEqual(view(whole));
  });
});

describe('mayChoose', () => {
  it('hands a plan only the webhooks whose subscription and activeSince let them choose an event, and the plan is the same', () => {
    const all = storedWebhook({ events: ['*'] });
    const created = storedWebhook({ events: ['policy.created'] });
    const other = storedWebhook({ events: ['user.login'] });
    const late = storedWebhook({ events: ['*'], activeSince: now });
    const filtered = storedWebhook({ events: ['gateway.tool.error'], condition: 'event.actor_id == "nobody"' });
    const webhooks = [all, created, other, late, filtered];
    const batch = events(4);

    // The condition is the render thread's to evaluate: a subscribed webhook goes, whatever its condition.
    expect(mayChoose(webhooks, batch, 'live')).toEqual([all, created, filtered]);
    // Replay ignores activeSince; a batch flush takes every event already chosen.
    expect(mayChoose(webhooks, batch, 'replay')).toEqual([all, created, late, filtered]);
    expect(mayChoose(webhooks, batch, 'all')).toEqual(webhooks);
    // One event received after a late webhook became active is enough for it to be handed the plan.
    expect(mayChoose([late], [...batch, ...events(1, new Date(now.getTime() + 1))], 'live')).toEqual([late]);
    expect(mayChoose([other], batch, 'live')).toEqual([]);

    const whole = planDeliveries({ webhooks, events: batch, now, filter: 'live', buffer: true }, deps);
    const narrowed = planDeliveries(
      { webhooks: mayChoose(webhooks, batch, 'live'), events: batch, now, filter: 'live', buffer: true },
      deps,
    );
    const shape = (plan: typeof whole) => plan.deliveries.map((d) => [d.webhookId, d.eventIds, d.status]);
    expect(shape(narrowed)).toEqual(shape(whole));
    expect(whole.deliveries.length).toBeGreaterThan(0);
  });
});
