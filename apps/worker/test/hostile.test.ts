import { compileEventCondition } from '@gatehook/conditions/event-condition';
import { MAX_STORED_TEXT_LENGTH } from '@gatehook/core/sanitise';
import { createTestOrg, type TestOrg } from '@gatehook/testkit/api';
import type { TestReceiver } from '@gatehook/testkit/receiver';
import { auditEvent, startStack, type Stack } from '@gatehook/testkit/stack';

// One tenant's stored program or receiver turned hostile, against the shared worker: each case asserts the bound
// (the poisoned event fails or is skipped for that webhook alone, with a clear error that echoes nothing), and
// that a webhook of another organisation still gets its event within a few seconds of it.
jest.setTimeout(60_000);

let stack: Stack;
let other: TestOrg;
let bystander: TestReceiver;

beforeAll(async () => {
  stack = await startStack();
  other = await createTestOrg(stack.api.db);
  bystander = await stack.receiver();
  const created = await stack.api.call('POST', '/webhooks', {
    key: other.admin,
    body: { name: 'bystander', url: bystander.url('/other'), events: ['*'] },
  });
  expect(created.status).toBe(201);
});
afterAll(async () => {
  await stack.close();
});

/** Ingests one event for the other organisation and waits (a few seconds at most) for its receiver to get it. */
async function otherOrganisationStillServed(): Promise<void> {
  const ingested = await stack.api.call('POST', '/audit-events', {
    key: other.admin,
    body: { events: [auditEvent({ action: 'policy.updated' })] },
  });
  expect(ingested.status).toBe(202);
  const [id] = ingested.body.ids as string[];
  await bystander.waitFor((requests) => requests.some((r) => JSON.parse(r.body).data.id === id), 5_000);
}

const MARKER = 'do-not-echo-7f3a';
/** A list big enough that a few nested loops over it are billions of steps. */
const wide = Array.from({ length: 2_000 }, (_, i) => `${MARKER}-${i}`);
const bigEvent = () =>
  auditEvent({
    action: 'policy.created',
    payload: { policy_name: MARKER, effect: 'allow', list: wide },
    resources: Object.fromEntries(wide.map((w) => [w, MARKER])),
  });

it.each([
  [
    'would write gigabytes',
    '{"a": "{{range .Payload.list}}{{range $.Payload.list}}{{range $.Payload.list}}{{.}}{{end}}{{end}}{{end}}"}',
    /output larger than \d+ bytes/,
  ],
  [
    'would loop for hours writing nothing',
    '{"a": "{{range .Payload.list}}{{range $.Payload.list}}{{range $.Payload.list}}{{end}}{{end}}{{end}}"}',
    /deadline|budget|steps|time/i,
  ],
])(
  'a template that %s fails its own delivery with a clear error, and nobody waits for it',
  async (_what, template, message) => {
    const receiver = await stack.receiver();
    const hook = await stack.webhook(receiver, { events: ['policy.created'], template: '{"a": 1}' });
    await stack.writeWebhookRow(hook.id, { template });
    const [poisoned] = await stack.ingest([bigEvent()]);
    await otherOrganisationStillServed();
    const [failed] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed', 20_000);
    const detail = await stack.api.call('GET', `/webhooks/${hook.id}/deliveries/${failed!.id}`, {
      key: stack.org.admin,
    });
    expect(detail.body.event_ids).toEqual([poisoned]);
    expect(detail.body.error).toMatch(/^template_error: /);
    expect(detail.body.error).toMatch(message);
    expect(detail.body.error).not.toContain(MARKER);
    expect(detail.body.error.length).toBeLessThan(1_000);
    await stack.settle([poisoned!]);
    expect(receiver.requests).toHaveLength(0);
  },
);

it('a condition over its evaluation budget skips that event for its webhook alone', async () => {
  const receiver = await stack.receiver();
  const hook = await stack.webhook(receiver, { events: ['policy.created'] });
  // A condition that compiles for policy.created (the runtime compiles it as save would) and is true for this
  // event when evaluated to the end, so only evaluation's budget can skip the event: two nested comprehensions
  // (the most save allows) over 2,000 resources are 4 million steps.
  const condition = 'event.resources.all(x, event.resources.all(y, x != "n" || y != "n"))';
  expect(compileEventCondition(condition, ['policy.created']).ok).toBe(true);
  await stack.writeWebhookRow(hook.id, { condition });
  const plain = await stack.receiver();
  await stack.webhook(plain, { events: ['policy.created'] });
  const [poisoned] = await stack.ingest([bigEvent()]);
  await otherOrganisationStillServed();
  // The same organisation's other webhook gets the very event the condition choked on.
  await plain.waitFor((requests) => requests.some((r) => JSON.parse(r.body).data.id === poisoned), 5_000);
  await stack.settle([poisoned!]);
  expect(receiver.requests).toHaveLength(0);
  expect((await stack.api.call('GET', `/webhooks/${hook.id}/deliveries`, { key: stack.org.admin })).body.items).toEqual(
    [],
  );
  // The control: the same condition on an event of ten resources is true, and that event is delivered.
  const [small] = await stack.ingest([
    auditEvent({ resources: Object.fromEntries(wide.slice(0, 10).map((w) => [w, 'r'])) }),
  ]);
  await receiver.waitFor((requests) => requests.some((r) => JSON.parse(r.body).data.id === small), 5_000);
});

it('a receiver answering with an endless body is cut off: the attempt is bounded and its snippet small', async () => {
  const huge = 'x'.repeat(8 * 1024 * 1024);
  const receiver = await stack.receiver(() => ({ status: 500, body: huge }));
  const hook = await stack.webhook(receiver, { events: ['policy.created'] });
  await stack.ingest([auditEvent()]);
  const [delivery] = await stack.deliveries(hook.id, (items) => (items[0]?.attempt_count ?? 0) >= 1);
  await otherOrganisationStillServed();
  const attempts = await stack.api.call('GET', `/webhooks/${hook.id}/deliveries/${delivery!.id}/attempts`, {
    key: stack.org.admin,
  });
  const first = attempts.body.items[0];
  expect(first.status_code).toBe(500);
  expect(first.response_snippet.length).toBeLessThanOrEqual(1024);
});

it('a receiver answering 200 with a binary body (NUL bytes) has its attempt recorded once, with a storable snippet', async () => {
  const gif = `GIF89a\u0001\u0000\u0001\u0000\u0080\u0000\u0000${'\u0000'.repeat(64)}\uD800;`;
  const receiver = await stack.receiver(() => ({ status: 200, headers: { 'content-type': 'image/gif' }, body: gif }));
  const hook = await stack.webhook(receiver, { events: ['policy.created'] });
  const [id] = await stack.ingest([auditEvent()]);
  const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
  await stack.settle([id!]);
  expect(receiver.requests).toHaveLength(1);
  expect(delivery!.attempt_count).toBe(1);
  const snippet = delivery!.attempts[0]!.response_snippet;
  expect(snippet.startsWith('GIF89a')).toBe(true);
  expect(snippet).not.toContain('\u0000');
});

it('a template error quoting a long part of the template is stored bounded, through the one sanitiser', async () => {
  const receiver = await stack.receiver();
  // Renders for the sample event at save (policy.created); fails on a policy.updated event at delivery, and
  // Go's error quotes the failing action with its 5,000-character argument.
  const long = 'k'.repeat(5_000);
  const hook = await stack.webhook(receiver, {
    events: ['policy.created', 'policy.updated'],
    template: `{{if eq .Action "policy.updated"}}{{index .Payload "${long}" 3}}{{end}}{"a": 1}`,
  });
  const [id] = await stack.ingest([auditEvent({ action: 'policy.updated' })]);
  const [failed] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');
  const detail = await stack.api.call('GET', `/webhooks/${hook.id}/deliveries/${failed!.id}`, { key: stack.org.admin });
  expect(detail.body.event_ids).toEqual([id]);
  expect(detail.body.error).toMatch(
    /^template_error: template: template:1:\d+: executing "template" at <index \.Payload "kkk/,
  );
  expect(detail.body.error).toHaveLength(MAX_STORED_TEXT_LENGTH);
});

it('a receiver answering 429 forever gets a bounded number of requests, then the delivery fails', async () => {
  const receiver = await stack.receiver(() => ({ status: 429, headers: { 'retry-after': '0' }, body: 'slow down' }));
  const hook = await stack.webhook(receiver, { events: ['policy.created'] });
  const [id] = await stack.ingest([auditEvent()]);
  await otherOrganisationStillServed();
  await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed', 30_000);
  await stack.settle([id!]);
  // The 429 cap and the retry limit bound what one delivery can send.
  expect(receiver.requests.length).toBeGreaterThan(1);
  expect(receiver.requests.length).toBeLessThanOrEqual(40);
});
