import { performance } from 'node:perf_hooks';
import { REQUEST_RENDER_BUDGET_MS } from '@gatehook/delivery/render/payload-template';
import { createTestOrg, startTestApi, type TestApi, type TestOrg, type TestResponse } from '@gatehook/testkit/api';
import { auditEvent } from '@gatehook/testkit/stack';
import { testLookup } from './lookup';

// CONTRACT 15, API: previews and test sends render in the API's render pool under one budget for the whole
// request, and the API's other requests keep being answered meanwhile.

const PRINTF = '{{$_ := printf "%09999d" 1}}';
// Cheap on the save-time sample (no items); a few hundred milliseconds on an event with 10,000 items, under 1 s.
const SLOW_TEMPLATE = `{"slow": true{{range .Payload.items}}${PRINTF.repeat(4)}{{end}}}`;
const slowEvent = () =>
  auditEvent({ action: 'anomaly_finding.created', payload: { items: Array.from({ length: 10_000 }, () => 0) } });
// A hundredth of that: a few milliseconds, well under the request's budget.
const smallEvent = () =>
  auditEvent({ action: 'anomaly_finding.created', payload: { items: Array.from({ length: 100 }, () => 0) } });
// Cheap on the sample; on the test send's own event it runs until the render budget stops it.
const SLOW_ON_TEST = `{{if eq .Action "webhook.test"}}{{range 100000000}}${PRINTF}{{end}}{{end}}{"a": 1}`;
/**
 * The longest /healthz may take while renders run. CONTRACT 15 says about 250 ms; the margin is for a machine
 * whose two cores are shared with the test runner and the pool's threads. A render on the event loop takes
 * seconds here.
 */
const HEALTHZ_MAX_MS = 500;

let api: TestApi;
let org: TestOrg;

beforeAll(async () => {
  api = await startTestApi({ lookup: testLookup });
  org = await createTestOrg(api.db);
});
afterAll(() => api.close());

const preview = (events: unknown[], template = SLOW_TEMPLATE) =>
  api.call('POST', '/webhooks/preview', {
    key: org.admin,
    body: { template, format: 'single', max_events: 1, vars: {}, events },
  });

/** Probes /healthz one request after another until `work` settles; returns its answer and the probes. */
async function probeWhile(
  work: Promise<TestResponse>,
): Promise<{ answer: TestResponse; answeredAt: number; probes: { ms: number; endedAt: number }[] }> {
  let answeredAt = Number.POSITIVE_INFINITY;
  const settled = work.then((answer) => {
    answeredAt = performance.now();
    return answer;
  });
  const probes: { ms: number; endedAt: number }[] = [];
  while (answeredAt === Number.POSITIVE_INFINITY) {
    const started = performance.now();
    const health = await api.call('GET', '/healthz');
    expect(health.status).toBe(200);
    probes.push({ ms: performance.now() - started, endedAt: performance.now() });
  }
  return { answer: await settled, answeredAt, probes };
}

describe('POST /webhooks/preview in the render pool', () => {
  it('answers /healthz while a preview of a slow template over many events renders', async () => {
    const { answer, answeredAt, probes } = await probeWhile(preview(Array.from({ length: 10 }, slowEvent)));
    expect(probes[0]!.endedAt).toBeLessThan(answeredAt);
    expect(probes.length).toBeGreaterThan(1);
    expect(Math.max(...probes.map((p) => p.ms))).toBeLessThan(HEALTHZ_MAX_MS);
    expect(answer.status).toBe(422);
  });

  it('gives the whole request one render budget: a small event renders, events that together take far longer answer 422 at template once the budget is spent', async () => {
    const one = await preview([smallEvent()]);
    expect(one.status).toBe(200);
    expect(one.body.bodies).toEqual([{ content_type: 'application/json', body: '{"slow": true}' }]);

    const started = performance.now();
    const many = await preview(Array.from({ length: 10 }, slowEvent));
    expect(many.status).toBe(422);
    expect(many.body.error.details).toEqual([
      {
        path: 'template',
        message: `rendering the request's events takes longer than the ${REQUEST_RENDER_BUDGET_MS} ms budget of one request`,
      },
    ]);
    // Stopped at the budget, not after rendering every event.
    expect(performance.now() - started).toBeLessThan(REQUEST_RENDER_BUDGET_MS * 4);
  });
});

describe('POST /webhooks/{id}/test in the render pool', () => {
  it('answers /healthz while a stored template renders slowly on the test event, and reports the template error', async () => {
    const created = await api.call('POST', '/webhooks', {
      key: org.admin,
      body: { name: 'slow on test', url: 'https://hooks.example.com/in/slow', events: ['*'], template: SLOW_ON_TEST },
    });
    expect(created.status).toBe(201);
    const { answer, answeredAt, probes } = await probeWhile(
      api.call('POST', `/webhooks/${created.body.id}/test`, { key: org.admin }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      success: false,
      error: expect.stringMatching(
        new RegExp(`^template_error: .*execution stopped after ${REQUEST_RENDER_BUDGET_MS} ms`),
      ),
    });
    expect(probes[0]!.endedAt).toBeLessThan(answeredAt);
    expect(Math.max(...probes.map((p) => p.ms))).toBeLessThan(HEALTHZ_MAX_MS);
  });
});
