import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { testLookup } from './lookup';

let api: TestApi;
let org: TestOrg;
let webhookId: string;

const hour = 3_600_000;
const day = 24 * hour;
const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

beforeAll(async () => {
  // A retention of 2 days, so the "older than the retention" rule is tested on the configured value.
  api = await startTestApi({ lookup: testLookup, queues: false, env: { DELIVERY_RETENTION_DAYS: '2' } });
  org = await createTestOrg(api.db);
  webhookId = await webhook();
});
afterAll(() => api.close());

const call = (method: string, path: string, body?: unknown) => api.call(method, path, { key: org.admin, body });

async function webhook(): Promise<string> {
  const r = await call('POST', '/webhooks', { name: 'SIEM', url: 'https://hooks.example.com/in', events: ['*'] });
  expect(r.status).toBe(201);
  return r.body.id;
}

function expectError(r: { status: number; body: unknown }, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(r.body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String) }) });
}

// Window rules of CONTRACT 11, each a 422 naming its field, on both routes; nothing is started.
const anHourAgo = iso(-hour);
const windows: [string, Record<string, unknown>, string][] = [
  ['since equal to until', { since: anHourAgo, until: anHourAgo }, 'since'],
  ['since after until', { since: iso(-hour), until: iso(-2 * hour) }, 'since'],
  ['until more than a minute in the future', { since: iso(-hour), until: iso(2 * 60_000) }, 'until'],
  ['since in the future with until defaulting to now', { since: iso(30_000) }, 'since'],
  ['since older than the retention', { since: iso(-2 * day - 60_000), until: iso(-hour) }, 'since'],
  ['since missing', { until: iso(-hour) }, 'since'],
  ['since not a date-time', { since: 'yesterday' }, 'since'],
  ['since a number', { since: 1732212345 }, 'since'],
  ['until not a date-time', { since: iso(-hour), until: '2026-13-45' }, 'until'],
  ['until null', { since: iso(-hour), until: null }, 'until'],
  ['an unknown field', { since: iso(-hour), status: 'failed' }, 'status'],
];

describe.each(['recover', 'replay'])('POST /webhooks/{id}/%s', (kind) => {
  it.each(windows)('422 for %s', async (_name, body, path) => {
    const r = await call('POST', `/webhooks/${webhookId}/${kind}`, body);
    expectError(r, 422, 'validation_error');
    expect(r.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    expect(await api.db.webhookTask.count({ where: { webhookId } })).toBe(0);
  });

  it('400 for a body that is not JSON, or not an object', async () => {
    expectError(
      await api.call('POST', `/webhooks/${webhookId}/${kind}`, {
        key: org.admin,
        body: '{"since":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'bad_request',
    );
    expectError(await call('POST', `/webhooks/${webhookId}/${kind}`, [iso(-hour)]), 400, 'bad_request');
    expectError(await api.call('POST', `/webhooks/${webhookId}/${kind}`, { key: org.admin }), 400, 'bad_request');
  });

  it('404 for an unknown or malformed webhook id', async () => {
    expectError(
      await call('POST', `/webhooks/6a0e0d7c-0000-4000-8000-000000000000/${kind}`, { since: iso(-hour) }),
      404,
      'not_found',
    );
    expectError(await call('POST', `/webhooks/not-a-uuid/${kind}`, { since: iso(-hour) }), 404, 'not_found');
  });

  it.each(['pause', 'disable'])('409 when the webhook is not active (%s)', async (operation) => {
    const id = await webhook();
    expect((await call('POST', `/webhooks/${id}/${operation}`)).status).toBe(200);
    const r = await call('POST', `/webhooks/${id}/${kind}`, { since: iso(-hour) });
    expectError(r, 409, 'conflict');
    expect(r.body.error.message).toMatch(/paused|disabled/);
    expect(await api.db.webhookTask.count({ where: { webhookId: id } })).toBe(0);
  });
});

describe('one running task per webhook', () => {
  it('a second task, of either kind, is a 409 while the first runs', async () => {
    const id = await webhook();
    const first = await call('POST', `/webhooks/${id}/recover`, { since: iso(-hour) });
    expect(first.status).toBe(202);
    for (const kind of ['recover', 'replay']) {
      const r = await call('POST', `/webhooks/${id}/${kind}`, { since: iso(-hour) });
      expectError(r, 409, 'conflict');
      expect(r.body.error.message).toContain(first.body.id);
    }
  });

  it('concurrent starts: exactly one wins, the others are 409, never a 5xx', async () => {
    const id = await webhook();
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        call('POST', `/webhooks/${id}/${i % 2 ? 'replay' : 'recover'}`, { since: iso(-hour) }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([202, 409, 409, 409, 409, 409, 409, 409]);
    expect(await api.db.webhookTask.count({ where: { webhookId: id, status: 'running' } })).toBe(1);
  });
});

describe('reading tasks', () => {
  it("404 for an unknown, malformed or other webhook's task id", async () => {
    const other = await webhook();
    const started = await call('POST', `/webhooks/${other}/replay`, { since: iso(-hour) });
    expectError(
      await call('GET', `/webhooks/${webhookId}/tasks/6a0e0d7c-0000-4000-8000-000000000000`),
      404,
      'not_found',
    );
    expectError(await call('GET', `/webhooks/${webhookId}/tasks/nope`), 404, 'not_found');
    expectError(await call('GET', `/webhooks/${webhookId}/tasks/${started.body.id}`), 404, 'not_found');
    expectError(await call('GET', '/webhooks/6a0e0d7c-0000-4000-8000-000000000000/tasks'), 404, 'not_found');
  });

  it('400 for a bad cursor or limit', async () => {
    const bad = await call('GET', `/webhooks/${webhookId}/tasks?cursor=garbage`);
    expectError(bad, 400, 'bad_request');
    expect(bad.body.error.details[0].path).toBe('cursor');
    expectError(await call('GET', `/webhooks/${webhookId}/tasks?limit=0`), 400, 'bad_request');
    expectError(await call('GET', `/webhooks/${webhookId}/tasks?limit=101`), 400, 'bad_request');
  });
});
