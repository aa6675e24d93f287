import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';

let api: TestApi;
let org: TestOrg;

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.db);
});
afterAll(() => api.close());

const preview = (body: unknown) => api.call('POST', '/webhooks/preview', { key: org.admin, body });
const paths = (body: { error: { details?: { path: string }[] } }) => body.error.details?.map((d) => d.path);

describe('POST /webhooks/preview errors', () => {
  it('answers 422 at template for a template that does not parse or does not render JSON, as on save', async () => {
    for (const template of ['{{ .ID ', '{"a": {{ .ID }}}', '{"a": 1, "a": 2}']) {
      const previewed = await preview({ template });
      const saved = await api.call('POST', '/webhooks', {
        key: org.admin,
        body: { name: 'x', url: 'https://hooks.example.com/x', events: ['*'], template },
      });
      expect(previewed.status).toBe(422);
      expect(previewed.body.error.code).toBe('validation_error');
      expect(paths(previewed.body)).toEqual(['template']);
      expect(previewed.body.error.details[0].message).toBe(
        saved.body.error.details.find((d: { path: string }) => d.path === 'template').message,
      );
    }
  });

  it('answers 422 at template for an unset variable and at vars.<name> for a bad variable name', async () => {
    expect(paths((await preview({ template: '{"k": {{ json .Vars.key }}}' })).body)).toEqual(['template']);
    const bad = await preview({ template: '', vars: { '1bad': 'x' } });
    expect(bad.status).toBe(422);
    expect(paths(bad.body)).toEqual(['vars.1bad']);
  });

  it('answers 422 for format, max_events, unknown fields and malformed events, naming each', async () => {
    const response = await preview({ format: 'xml', max_events: 0, extra: 1 });
    expect(response.status).toBe(422);
    expect(paths(response.body)?.sort()).toEqual(['extra', 'format', 'max_events']);
    const events = await preview({ events: [{ action: 'policy.created' }] });
    expect(events.status).toBe(422);
    expect(paths(events.body)).toEqual(['events.0.actor_type']);
    const many = await preview({ events: Array.from({ length: 101 }, () => ({})) });
    expect(paths(many.body)).toEqual(['events']);
  });

  it('answers 422 at events.<n> when a given event does not render', async () => {
    const response = await preview({
      template: '{"s": {{ .Payload.s }}}',
      events: [{ action: 'policy.created', actor_type: 'user', payload: { s: 'not json' } }],
    });
    // The sample event renders (its s is absent: <no value> is not JSON either), so the template itself is named.
    expect(response.status).toBe(422);
    expect(paths(response.body)).toEqual(['template']);
    const ok = await preview({
      template: '{"s": {{ json .Payload.s }}{{ if .Payload.bad }}, "s": 1{{ end }}}',
      events: [{ action: 'policy.created', actor_type: 'user', payload: { bad: true } }],
    });
    expect(ok.status).toBe(422);
    expect(paths(ok.body)).toEqual(['events.0']);
  });

  it('answers 400 for a body that is not JSON', async () => {
    const response = await api.call('POST', '/webhooks/preview', {
      key: org.admin,
      body: 'nope',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('bad_request');
  });
});
