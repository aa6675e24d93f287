import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { testLookup } from './lookup';

let api: TestApi;
let org: TestOrg;
let stranger: TestOrg;
let webhookId: string;
let taskId: string;

const since = () => new Date(Date.now() - 3_600_000).toISOString();
const URL_SECRET = 'tok3n-in-the-url';

beforeAll(async () => {
  api = await startTestApi({ lookup: testLookup, queues: false });
  org = await createTestOrg(api.db);
  stranger = await createTestOrg(api.db);
  const created = await api.call('POST', '/webhooks', {
    key: org.admin,
    body: {
      name: 'SIEM',
      url: `https://hooks.example.com/in?token=${URL_SECRET}`,
      events: ['*'],
      headers: { 'X-Api-Key': 'h3ader-secret' },
    },
  });
  webhookId = created.body.id;
  taskId = (await api.call('POST', `/webhooks/${webhookId}/replay`, { key: org.admin, body: { since: since() } })).body
    .id;
});
afterAll(() => api.close());

type Route = { method: string; path: () => string; body?: () => unknown; needs: 'admin' | 'manage_webhooks' };
const routes: Route[] = [
  { method: 'POST', path: () => `/webhooks/${webhookId}/recover`, body: () => ({ since: since() }), needs: 'admin' },
  { method: 'POST', path: () => `/webhooks/${webhookId}/replay`, body: () => ({ since: since() }), needs: 'admin' },
  { method: 'GET', path: () => `/webhooks/${webhookId}/tasks`, needs: 'manage_webhooks' },
  { method: 'GET', path: () => `/webhooks/${webhookId}/tasks/${taskId}`, needs: 'manage_webhooks' },
];
const label = (r: Route) => `${r.method} ${r.path().replace(webhookId, '{id}').replace(taskId, '{task_id}')}`;

describe.each(routes.map((r) => [label(r), r] as const))('%s', (_label, route) => {
  const send = (key: string | undefined, headers: Record<string, string> = {}) =>
    api.call(route.method, route.path(), {
      ...(key ? { key } : {}),
      ...(route.body ? { body: route.body() } : {}),
      headers,
    });

  it('401 without a key, with a malformed key and with an unknown key', async () => {
    for (const r of [
      await send(undefined),
      await send(undefined, { authorization: 'Bearer nope' }),
      await send(`ghk_${'A'.repeat(43)}`),
    ]) {
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('unauthorized');
    }
  });

  it('403 for a key without the permission', async () => {
    const r = await send(org.nobody);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('forbidden');
  });

  if (route.needs === 'admin') {
    it('403 for a member holding every permission but not the admin role', async () => {
      const r = await send(org.member);
      expect(r.status).toBe(403);
    });
  }

  it('404 for another organisation, exactly like a missing webhook', async () => {
    const r = await send(stranger.admin);
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('not_found');
    expect(r.text).not.toContain('SIEM');
  });
});

describe('nothing secret in task answers or audit events', () => {
  it('a task and the start audit event carry no URL, header value or secret', async () => {
    const list = await api.call('GET', `/webhooks/${webhookId}/tasks`, { key: org.admin });
    const events = await api.db.auditEvent.findMany({ where: { orgId: org.orgId, action: 'webhook.replay_started' } });
    for (const text of [list.text, JSON.stringify(events)]) {
      expect(text).not.toContain(URL_SECRET);
      expect(text).not.toContain('h3ader-secret');
      expect(text).not.toContain('whsec_');
      expect(text).not.toContain('hooks.example.com');
    }
  });

  it('a stranger cannot start a task on a webhook of another organisation, nor see its tasks', async () => {
    expect(await api.db.webhookTask.count({ where: { webhookId } })).toBe(1);
    const r = await api.call('GET', `/webhooks/${webhookId}/tasks/${taskId}`, { key: stranger.member });
    expect(r.status).toBe(404);
  });
});
