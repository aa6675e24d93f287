import { failTask } from '@gatehook/db/webhook-tasks';
import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { testLookup } from './lookup';

// API side of recover and replay (CONTRACT 11), without a worker: tasks stay running unless a test ends them.
let api: TestApi;
let org: TestOrg;

beforeAll(async () => {
  api = await startTestApi({ lookup: testLookup });
  org = await createTestOrg(api.db);
});
afterAll(() => api.close());

const call = (method: string, path: string, body?: unknown) => api.call(method, path, { key: org.admin, body });
const hour = 3_600_000;
const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

async function webhook(name = 'SIEM'): Promise<string> {
  const r = await call('POST', '/webhooks', { name, url: 'https://hooks.example.com/in', events: ['policy.created'] });
  expect(r.status).toBe(201);
  return r.body.id;
}

describe('POST /webhooks/{id}/recover and /replay', () => {
  it.each(['recover', 'replay'] as const)(
    '%s answers 202 with a running Task of exactly the contract shape',
    async (kind) => {
      const id = await webhook();
      const since = iso(-hour);
      const until = iso(-1000);
      const r = await call('POST', `/webhooks/${id}/${kind}`, { since, until });
      expect(r.status).toBe(202);
      expect(r.body).toEqual({
        id: expect.any(String),
        webhook_id: id,
        kind,
        status: 'running',
        since,
        until,
        total: null,
        processed: 0,
        error: null,
        created_at: expect.any(String),
        finished_at: null,
      });
      expect(Object.keys(r.body).sort()).toEqual([
        'created_at',
        'error',
        'finished_at',
        'id',
        'kind',
        'processed',
        'since',
        'status',
        'total',
        'until',
        'webhook_id',
      ]);
      expect((await call('GET', `/webhooks/${id}/tasks/${r.body.id}`)).body).toEqual(r.body);
    },
  );

  it('until defaults to now; offsets are accepted and normalised to UTC', async () => {
    const id = await webhook();
    const before = Date.now();
    const yesterday = new Date(Date.now() - 24 * hour).toISOString().slice(0, 10);
    const r = await call('POST', `/webhooks/${id}/recover`, { since: `${yesterday}T10:00:00+02:00` });
    expect(r.status).toBe(202);
    expect(new Date(r.body.until).getTime()).toBeGreaterThanOrEqual(before - 5);
    expect(new Date(r.body.until).getTime()).toBeLessThanOrEqual(Date.now() + 5);
    expect(r.body.since).toMatch(/T08:00:00\.000Z$/);
  });

  it('starting a task is audited with the task id and the window', async () => {
    const id = await webhook('Audited');
    const since = iso(-2 * hour);
    const r = await call('POST', `/webhooks/${id}/replay`, { since });
    const events = await api.db.auditEvent.findMany({ where: { orgId: org.orgId, resourceId: id } });
    const started = events.find((e) => e.action === 'webhook.replay_started');
    expect(started).toMatchObject({ actorType: 'user', resourceType: 'webhook', resourceDisplayName: 'Audited' });
    expect(started!.payload).toEqual({
      webhook_id: id,
      webhook_name: 'Audited',
      task_id: r.body.id,
      since,
      until: r.body.until,
    });
  });

  it('a new task may start once the running one has finished', async () => {
    const id = await webhook();
    const first = await call('POST', `/webhooks/${id}/recover`, { since: iso(-hour) });
    expect((await call('POST', `/webhooks/${id}/replay`, { since: iso(-hour) })).status).toBe(409);
    await failTask(api.db, first.body.id, 'ended by the test', new Date());
    const second = await call('POST', `/webhooks/${id}/replay`, { since: iso(-hour) });
    expect(second.status).toBe(202);
  });
});

describe('GET /webhooks/{id}/tasks', () => {
  it('lists newest first with cursor paging', async () => {
    const id = await webhook();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call('POST', `/webhooks/${id}/${i % 2 ? 'replay' : 'recover'}`, { since: iso(-hour) });
      expect(r.status).toBe(202);
      ids.push(r.body.id);
      await failTask(api.db, r.body.id, 'ended by the test', new Date());
    }
    const all = await call('GET', `/webhooks/${id}/tasks`);
    expect(all.status).toBe(200);
    expect(all.body.items.map((t: { id: string }) => t.id)).toEqual([...ids].reverse());
    expect(all.body.items[0]).toMatchObject({
      status: 'failed',
      error: 'ended by the test',
      finished_at: expect.any(String),
    });
    expect(all.body.next_cursor).toBeNull();

    const first = await call('GET', `/webhooks/${id}/tasks?limit=2`);
    expect(first.body.items.map((t: { id: string }) => t.id)).toEqual([ids[2], ids[1]]);
    const second = await call('GET', `/webhooks/${id}/tasks?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.items.map((t: { id: string }) => t.id)).toEqual([ids[0]]);
    expect(second.body.next_cursor).toBeNull();
  });

  it('a member with manage_webhooks may read tasks', async () => {
    const id = await webhook();
    const r = await call('POST', `/webhooks/${id}/recover`, { since: iso(-hour) });
    const list = await api.call('GET', `/webhooks/${id}/tasks`, { key: org.member });
    expect(list.status).toBe(200);
    expect(list.body.items[0].id).toBe(r.body.id);
    expect((await api.call('GET', `/webhooks/${id}/tasks/${r.body.id}`, { key: org.member })).status).toBe(200);
  });
});

describe('documentation', () => {
  it('the OpenAPI document describes the task routes with their access rules', async () => {
    const doc = (await api.call('GET', '/openapi.json')).body;
    expect(doc.paths['/webhooks/{id}/recover'].post).toMatchObject({
      operationId: 'recoverWebhook',
      'x-role': 'admin',
    });
    expect(doc.paths['/webhooks/{id}/replay'].post.requestBody).toBeDefined();
    expect(doc.paths['/webhooks/{id}/tasks'].get['x-permission']).toBe('manage_webhooks');
    expect(doc.paths['/webhooks/{id}/tasks/{task_id}'].get.responses['200']).toBeDefined();
  });

  it('the start events are in the catalogue and cannot be ingested', async () => {
    const types = (await call('GET', '/event-types')).body.items.map((t: { action: string }) => t.action);
    expect(types).toEqual(expect.arrayContaining(['webhook.recovery_started', 'webhook.replay_started']));
    const forged = await call('POST', '/audit-events', { action: 'webhook.recovery_started', actor_type: 'user' });
    expect(forged.status).toBe(422);
  });
});
