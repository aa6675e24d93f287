import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';

let api: TestApi;
let org: TestOrg;
const logLines: string[] = [];

beforeAll(async () => {
  api = await startTestApi({ logLines });
  org = await createTestOrg(api.db);
});
afterAll(() => api.close());

describe('destinations and preview security', () => {
  it('answers 401 without a valid key', async () => {
    expect((await api.call('GET', '/destinations')).status).toBe(401);
    expect(
      (await api.call('GET', '/destinations', { key: 'ghk_unknownunknownunknownunknownunknownunknow' })).status,
    ).toBe(401);
    expect((await api.call('POST', '/webhooks/preview', { body: {} })).status).toBe(401);
  });

  it('lets only admins preview (403 for a member holding every permission)', async () => {
    const response = await api.call('POST', '/webhooks/preview', { key: org.member, body: {} });
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe('forbidden');
  });

  it('uses var values for the render only: never stored, never logged, never in an error', async () => {
    const secret = 'S3CRET-var-value-1234';
    const ok = await api.call('POST', '/webhooks/preview', {
      key: org.admin,
      body: { template: '{"k": {{ json .Vars.key }}}', vars: { key: secret } },
    });
    expect(JSON.parse(ok.body.bodies[0].body)).toEqual({ k: secret });
    const failed = await api.call('POST', '/webhooks/preview', {
      key: org.admin,
      body: { template: '{"k": {{ .Vars.key }}}', vars: { key: secret } },
    });
    expect(failed.status).toBe(422);
    expect(failed.text).not.toContain(secret);
    expect(logLines.join('\n')).not.toContain(secret);
    expect(await api.db.webhook.count({ where: { orgId: org.orgId } })).toBe(0);
  });
});
