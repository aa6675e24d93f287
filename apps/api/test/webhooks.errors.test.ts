import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { testLookup } from './lookup';

let api: TestApi;
let org: TestOrg;
let webhookId: string;

const base = { name: 'SIEM', url: 'https://hooks.example.com/in', events: ['policy.created'] };

beforeAll(async () => {
  api = await startTestApi({ lookup: testLookup });
  org = await createTestOrg(api.db);
  webhookId = (await api.call('POST', '/webhooks', { key: org.admin, body: { ...base, vars: { KEPT: 'v' } } })).body.id;
});
afterAll(() => api.close());

function expectErrorShape(body: unknown, code: string) {
  expect(body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String) }) });
}

// One row per field rule of SPEC 2.1 / 7.1 that the foundation enforces, each answered 422 on its path.
const fieldRules: [string, Record<string, unknown>, string][] = [
  ['blank name', { name: '   ' }, 'name'],
  ['name over 200 characters', { name: 'n'.repeat(201) }, 'name'],
  ['name not a string', { name: 7 }, 'name'],
  ['http URL', { url: 'http://hooks.example.com/in' }, 'url'],
  ['URL that is not a URL', { url: 'hooks.example.com/in' }, 'url'],
  ['URL on a private address', { url: 'https://10.1.2.3/in' }, 'url'],
  ['URL whose host resolves to a private address', { url: 'https://internal.example.com/in' }, 'url'],
  ['URL whose host does not resolve', { url: 'https://nowhere.example.com/in' }, 'url'],
  ['URL over 2048 characters', { url: `https://hooks.example.com/${'a'.repeat(2048)}` }, 'url'],
  ['events empty', { events: [] }, 'events'],
  ['events not an array', { events: 'policy.created' }, 'events'],
  ['unknown event', { events: ['policy.created', 'nope.nothing'] }, 'events.1'],
  ['* with other events', { events: ['*', 'policy.created'] }, 'events.0'],
  ['duplicate event', { events: ['policy.created', 'policy.created'] }, 'events.1'],
  ['condition over 1024 characters', { condition: 'x'.repeat(1025) }, 'condition'],
  ['template over 64 KiB', { template: 't'.repeat(65_537) }, 'template'],
  ['unknown format', { format: 'xml' }, 'format'],
  ['max_events 0', { max_events: 0 }, 'max_events'],
  ['max_events 101', { max_events: 101 }, 'max_events'],
  ['max_events fractional', { max_events: 2.5 }, 'max_events'],
  ['max_events as a string', { max_events: '5' }, 'max_events'],
  ['unknown destination', { destination: 'myspace' }, 'destination'],
  ['reserved header content-type', { headers: { 'Content-Type': 'text/plain' } }, 'headers.Content-Type'],
  ['reserved header user-agent', { headers: { 'user-agent': 'x' } }, 'headers.user-agent'],
  ['reserved header webhook-id', { headers: { 'webhook-id': 'x' } }, 'headers.webhook-id'],
  ['reserved header webhook-timestamp', { headers: { 'Webhook-Timestamp': '1' } }, 'headers.Webhook-Timestamp'],
  ['reserved header webhook-signature', { headers: { 'webhook-signature': 'v1,x' } }, 'headers.webhook-signature'],
  ['reserved header host', { headers: { Host: 'evil' } }, 'headers.Host'],
  ['reserved header content-length', { headers: { 'content-length': '1' } }, 'headers.content-length'],
  ['reserved header transfer-encoding', { headers: { 'Transfer-Encoding': 'chunked' } }, 'headers.Transfer-Encoding'],
  ['reserved header connection', { headers: { connection: 'close' } }, 'headers.connection'],
  ['header name with a space', { headers: { 'X Bad': 'x' } }, 'headers.X Bad'],
  ['header value with a control character', { headers: { 'X-Token': 'Bearer a\u0007b' } }, 'headers.X-Token'],
  ['header value with a character past U+00FF', { headers: { 'X-Token': 'Bearer ✓' } }, 'headers.X-Token'],
  ['header name with a colon', { headers: { 'X-Bad:': 'x' } }, 'headers.X-Bad:'],
  ['header value with CR LF', { headers: { 'X-Token': 'a\r\nSet-Cookie: x' } }, 'headers.X-Token'],
  ['header value with LF', { headers: { 'X-Token': 'a\nb' } }, 'headers.X-Token'],
  ['header value not a string', { headers: { 'X-Token': 5 } }, 'headers.X-Token'],
  ['same header twice in different case', { headers: { 'X-A': '1', 'x-a': '2' } }, 'headers.x-a'],
  ['variable name with a dash', { vars: { 'api-key': 'x' } }, 'vars.api-key'],
  ['variable name starting with a digit', { vars: { '1st': 'x' } }, 'vars.1st'],
  ['variable value not a string', { vars: { TOKEN: true } }, 'vars.TOKEN'],
  ['unknown field', { secret: 'whsec_mine' }, 'secret'],
  ['rate_limit_per_second 0', { rate_limit_per_second: 0 }, 'rate_limit_per_second'],
  ['rate_limit_per_second 10001', { rate_limit_per_second: 10_001 }, 'rate_limit_per_second'],
  ['rate_limit_per_second fractional', { rate_limit_per_second: 2.5 }, 'rate_limit_per_second'],
  ['rate_limit_per_second as a string', { rate_limit_per_second: '50' }, 'rate_limit_per_second'],
  ['client_certificate not an object', { client_certificate: 'PEM' }, 'client_certificate'],
  [
    'client_certificate that does not parse',
    { client_certificate: { cert: 'not a certificate', key: 'not a key' } },
    'client_certificate',
  ],
];

describe('422 validation_error per field rule', () => {
  it.each(fieldRules)('POST /webhooks rejects %s', async (_name, patch, path) => {
    const r = await api.call('POST', '/webhooks', { key: org.admin, body: { ...base, ...patch } });
    expect(r.status).toBe(422);
    expectErrorShape(r.body, 'validation_error');
    expect(r.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it.each(fieldRules)('PATCH /webhooks/{id} rejects %s', async (_name, patch, path) => {
    const r = await api.call('PATCH', `/webhooks/${webhookId}`, { key: org.admin, body: patch });
    expect(r.status).toBe(422);
    expect(r.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it.each([
    ['name', { url: base.url, events: base.events }],
    ['url', { name: 'x', events: base.events }],
    ['events', { name: 'x', url: base.url }],
  ])('POST /webhooks requires %s', async (field, body) => {
    const r = await api.call('POST', '/webhooks', { key: org.admin, body });
    expect(r.status).toBe(422);
    expect(r.body.error.details.map((d: { path: string }) => d.path)).toContain(field);
  });

  it('PATCH refuses a blank value for a variable or header that has nothing stored', async () => {
    const vars = await api.call('PATCH', `/webhooks/${webhookId}`, {
      key: org.admin,
      body: { vars: { KEPT: '', NEW: '' } },
    });
    expect(vars.status).toBe(422);
    expect(vars.body.error.details).toEqual([{ path: 'vars.NEW', message: expect.stringContaining('none is stored') }]);
    const headers = await api.call('PATCH', `/webhooks/${webhookId}`, {
      key: org.admin,
      body: { headers: { 'X-New': '' } },
    });
    expect(headers.status).toBe(422);
    expect(headers.body.error.details[0].path).toBe('headers.X-New');
  });

  it('a rejected PATCH changes nothing', async () => {
    const before = (await api.call('GET', `/webhooks/${webhookId}`, { key: org.admin })).body;
    await api.call('PATCH', `/webhooks/${webhookId}`, { key: org.admin, body: { name: 'Changed', max_events: 500 } });
    expect((await api.call('GET', `/webhooks/${webhookId}`, { key: org.admin })).body).toEqual(before);
  });
});

describe('400 bad_request', () => {
  it.each([
    ['a body that is not JSON', '{"name": "x",', { 'content-type': 'application/json' }],
    ['a JSON array', '[]', { 'content-type': 'application/json' }],
    ['a JSON string', '"webhook"', { 'content-type': 'application/json' }],
    ['a form-encoded body', 'name=x&url=y', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['a text body', '{"name":"x"}', { 'content-type': 'text/plain' }],
  ])('POST /webhooks with %s', async (_name, body, headers) => {
    const r = await api.call('POST', '/webhooks', { key: org.admin, body, headers });
    expect(r.status).toBe(400);
    expectErrorShape(r.body, 'bad_request');
  });

  it('POST /webhooks without a body', async () => {
    const r = await api.call('POST', '/webhooks', { key: org.admin });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/JSON body is required/);
  });

  it.each([
    ['?status=deleted', 'status'],
    ['?limit=0', 'limit'],
    ['?limit=101', 'limit'],
    ['?limit=ten', 'limit'],
    ['?cursor=not-a-cursor', 'cursor'],
    [`?cursor=${Buffer.from('{"c":"2026-01-01T00:00:00.000Z","i":"x"}').toString('base64url')}`, 'cursor'],
  ])('GET /webhooks%s', async (query, path) => {
    const r = await api.call('GET', `/webhooks${query}`, { key: org.admin });
    expect(r.status).toBe(400);
    expect(r.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
  });
});

describe('404 not_found', () => {
  const unknown = '6a0e0d7c-0000-4000-8000-000000000000';
  it.each([
    ['GET', ''],
    ['PATCH', ''],
    ['DELETE', ''],
    ['POST', '/rotate-secret'],
    ['POST', '/enable'],
    ['POST', '/disable'],
    ['POST', '/pause'],
    ['POST', '/resume'],
  ])('%s /webhooks/{unknown}%s', async (method, suffix) => {
    const body = method === 'PATCH' ? { name: 'x' } : undefined;
    const r = await api.call(method, `/webhooks/${unknown}${suffix}`, { key: org.admin, body });
    expect(r.status).toBe(404);
    expectErrorShape(r.body, 'not_found');
  });

  it.each(['not-a-uuid', '123', '6a0e0d7c-0000-4000-8000-00000000000'])(
    'a malformed id (%s) is a 404 too',
    async (id) => {
      const r = await api.call('GET', `/webhooks/${id}`, { key: org.admin });
      expect(r.status).toBe(404);
      expectErrorShape(r.body, 'not_found');
    },
  );

  it('an unknown route is a 404 in the same shape', async () => {
    const r = await api.call('GET', '/nothing-here', { key: org.admin });
    expect(r.status).toBe(404);
    expectErrorShape(r.body, 'not_found');
  });
});

describe('409 conflict and 413 payload_too_large', () => {
  it('resume and pause of a disabled webhook are refused', async () => {
    const id = (await api.call('POST', '/webhooks', { key: org.admin, body: base })).body.id;
    await api.call('POST', `/webhooks/${id}/disable`, { key: org.admin });
    for (const op of ['resume', 'pause']) {
      const r = await api.call('POST', `/webhooks/${id}/${op}`, { key: org.admin });
      expect(r.status).toBe(409);
      expectErrorShape(r.body, 'conflict');
    }
    expect((await api.call('GET', `/webhooks/${id}`, { key: org.admin })).body.status).toBe('disabled');
  });

  it('a body over 1 MB is refused before validation', async () => {
    const r = await api.call('POST', '/webhooks', {
      key: org.admin,
      body: { ...base, template: 'x'.repeat(1_100_000) },
    });
    expect(r.status).toBe(413);
    expectErrorShape(r.body, 'payload_too_large');
  });
});

describe('500 internal', () => {
  it('never carries a stack or the cause when a dependency fails', async () => {
    const broken = await startTestApi({
      env: { DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/gatehook_no_such_database' },
    });
    try {
      const r = await broken.call('GET', '/webhooks', { key: org.admin });
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ error: { code: 'internal', message: 'An internal error occurred' } });
      const ready = await broken.call('GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks.postgres).toBe('failed');
    } finally {
      await broken.close();
    }
  });
});
