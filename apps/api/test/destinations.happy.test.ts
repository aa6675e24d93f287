import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { DESTINATIONS } from '@gatehook/core/webhook-schema';
import { testLookup } from './lookup';

let api: TestApi;
let org: TestOrg;

beforeAll(async () => {
  api = await startTestApi({ lookup: testLookup });
  org = await createTestOrg(api.db);
});
afterAll(() => api.close());

describe('GET /destinations', () => {
  it('lists one preset per allowed destination, in the contract shape, to any valid key', async () => {
    const response = await api.call('GET', '/destinations', { key: org.nobody });
    expect(response.status).toBe(200);
    expect(response.body.items.map((p: { id: string }) => p.id)).toEqual([...DESTINATIONS]);
    for (const preset of response.body.items) {
      expect(Object.keys(preset).sort()).toEqual([
        'auth',
        'format',
        'headers',
        'id',
        'label',
        'max_events',
        'template',
        'vars',
      ]);
    }
    expect(response.body.items.find((p: { id: string }) => p.id === 'pagerduty')).toMatchObject({
      format: 'single',
      vars: ['routing_key'],
    });
  });

  it('gives presets that a webhook can be saved with as they are', async () => {
    const { body } = await api.call('GET', '/destinations', { key: org.admin });
    for (const preset of body.items) {
      const created = await api.call('POST', '/webhooks', {
        key: org.admin,
        body: {
          name: preset.label,
          url: 'https://hooks.example.com/in/abc123XYZ',
          events: ['*'],
          destination: preset.id,
          format: preset.format,
          max_events: preset.max_events,
          template: preset.template,
          vars: Object.fromEntries(preset.vars.map((v: string) => [v, 'value'])),
          headers: Object.fromEntries(preset.headers.map((h: string) => [h, 'value'])),
        },
      });
      expect([preset.id, created.status]).toEqual([preset.id, 201]);
    }
  });
});

describe('POST /webhooks/preview', () => {
  it('renders the sample event through the default envelope when the template is blank', async () => {
    const response = await api.call('POST', '/webhooks/preview', {
      key: org.admin,
      body: { template: '', format: 'single', max_events: 1, vars: {} },
    });
    expect(response.status).toBe(200);
    expect(response.body.bodies).toHaveLength(1);
    expect(response.body.bodies[0].content_type).toBe('application/json');
    expect(JSON.parse(response.body.bodies[0].body)).toMatchObject({
      type: 'anomaly_finding.created',
      data: { org_id: org.orgId },
    });
  });

  it('renders the given events with the template and vars, packed by format and max_events', async () => {
    const events = [1, 2, 3].map((n) => ({
      id: `0193a4f0-0000-7000-8000-00000000000${n}`,
      action: 'policy.created',
      actor_type: 'user',
      payload: { n },
    }));
    const response = await api.call('POST', '/webhooks/preview', {
      key: org.admin,
      body: {
        template: '{"n": {{ json .Payload.n }}, "to": {{ json .Vars.team }}}',
        format: 'ndjson',
        max_events: 2,
        vars: { team: 'ops' },
        events,
      },
    });
    expect(response.status).toBe(200);
    expect(response.body.bodies).toEqual([
      { content_type: 'application/x-ndjson', body: '{"n": 1, "to": "ops"}\n{"n": 2, "to": "ops"}\n' },
      { content_type: 'application/x-ndjson', body: '{"n": 3, "to": "ops"}\n' },
    ]);
  });

  it('uses the defaults of a webhook for absent fields and stores nothing', async () => {
    const before = await api.db.webhook.count({ where: { orgId: org.orgId } });
    const response = await api.call('POST', '/webhooks/preview', { key: org.admin, body: {} });
    expect(response.status).toBe(200);
    expect(response.body.bodies).toHaveLength(1);
    expect(await api.db.webhook.count({ where: { orgId: org.orgId } })).toBe(before);
  });
});
