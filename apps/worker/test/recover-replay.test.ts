import { startTestEngine } from '@gatehook/testkit/engine';
import { startServiceProcess } from '@gatehook/testkit/processes';
import type { ReceivedRequest } from '@gatehook/testkit/receiver';
import { auditEvent, useStack } from '@gatehook/testkit/stack';

// Recover and replay end to end (CONTRACT 11): the real API and worker engine, HTTPS receivers, small pages so
// that every task takes several steps, and a small backlog so that pacing is exercised.
const TASK_ENV = { TASK_PAGE_SIZE: '3', TASK_MAX_BACKLOG: '3', TASK_LEASE_MS: '2000' };
const stack = useStack(TASK_ENV, { reconcilerGrace: { eventsMs: 500, deliveriesMs: 1000 } });

const call = (method: string, path: string, body?: unknown) =>
  stack.api.call(method, path, { key: stack.org.admin, body });
const eventIdOf = (request: ReceivedRequest): string[] => {
  const body = JSON.parse(request.body) as { data: { id: string } } | { data: { id: string } }[];
  return (Array.isArray(body) ? body : [body]).map((e) => e.data.id);
};

interface TaskView {
  id: string;
  status: string;
  total: number | null;
  processed: number;
  error: string | null;
  finished_at: string | null;
}

/** Polls a task until `predicate` holds. */
async function waitTask(
  webhookId: string,
  taskId: string,
  predicate: (task: TaskView) => boolean,
  timeoutMs = 20_000,
): Promise<TaskView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const task = (await call('GET', `/webhooks/${webhookId}/tasks/${taskId}`)).body as TaskView;
    if (predicate(task)) return task;
    if (Date.now() > deadline)
      throw new Error(`task: condition not met within ${timeoutMs} ms: ${JSON.stringify(task)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Ingests events whose deliveries to `webhookId` end failed (the receiver is down) and waits until the webhook has
 * `failedTotal` failed deliveries; returns the event ids.
 */
async function failedEvents(webhookId: string, count: number, failedTotal = count): Promise<string[]> {
  const ids = await stack.ingest(
    Array.from({ length: count }, (_, i) => auditEvent({ payload: { policy_name: `p${i}`, effect: 'allow' } })),
  );
  await stack.deliveries(
    webhookId,
    (items) => items.filter((d) => d.status === 'failed').length >= failedTotal,
    30_000,
  );
  return ids;
}

describe('recover (CONTRACT 11)', () => {
  it('after an outage, each failed event arrives exactly once more with the same webhook-id', async () => {
    let down = false;
    const r = await stack.receiver(() => (down ? { status: 500 } : { status: 200 }));
    const hook = await stack.webhook(r, { events: ['policy.created'] });
    const since = new Date(Date.now() - 1000).toISOString();
    const [healthy] = await stack.ingest([auditEvent({ payload: { policy_name: 'before the outage' } })]);
    await r.waitFor((reqs) => reqs.length === 1);
    await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');

    down = true;
    const lost = await failedEvents(hook.id, 7);
    const failed = (await stack.deliveries(hook.id, () => true)).filter((d) => d.status === 'failed');
    expect(failed).toHaveLength(7);
    expect(failed.every((d) => d.attempt_count === 8 && d.retryable)).toBe(true);
    const sentBefore = r.requests.length;

    down = false;
    const started = await call('POST', `/webhooks/${hook.id}/recover`, { since });
    expect(started.status).toBe(202);
    const task = await waitTask(hook.id, started.body.id, (t) => t.status !== 'running');
    expect(task).toMatchObject({
      status: 'succeeded',
      total: 7,
      processed: 7,
      error: null,
      finished_at: expect.any(String),
    });

    const all = await stack.deliveries(
      hook.id,
      (items) => items.length === 8 && items.every((d) => d.status === 'succeeded'),
    );
    const recovered = r.requests.slice(sentBefore);
    // Same delivery ids (webhook-id) as the failed deliveries, each exactly once; the earlier success not resent.
    expect(recovered.map((q) => q.headers['webhook-id']).sort()).toEqual(failed.map((d) => d.id).sort());
    expect(recovered.flatMap(eventIdOf).sort()).toEqual([...lost].sort());
    expect(recovered.flatMap(eventIdOf)).not.toContain(healthy);
    // A fresh cycle after the 8 failed attempts, which stay in the history.
    for (const d of all.filter((x) => failed.some((f) => f.id === x.id))) expect(d.attempt_count).toBe(9);
  });

  it('leaves deliveries outside the window alone', async () => {
    let down = true;
    const r = await stack.receiver(() => (down ? { status: 500 } : { status: 200 }));
    const hook = await stack.webhook(r, { events: ['policy.created'] });
    await failedEvents(hook.id, 2);
    const until = new Date().toISOString();
    await new Promise((res) => setTimeout(res, 20));
    await failedEvents(hook.id, 2, 4); // created after the window
    down = false;
    const started = await call('POST', `/webhooks/${hook.id}/recover`, {
      since: new Date(Date.now() - 60_000).toISOString(),
      until,
    });
    const task = await waitTask(hook.id, started.body.id, (t) => t.status !== 'running');
    expect(task).toMatchObject({ status: 'succeeded', total: 2, processed: 2 });
    const items = await stack.deliveries(hook.id, (list) => list.filter((d) => d.status === 'succeeded').length === 2);
    expect(items.filter((d) => d.status === 'failed')).toHaveLength(2);
  });

  it('a task whose webhook is paused while it runs ends failed with the reason', async () => {
    let down = true;
    const r = await stack.receiver(() => (down ? { status: 500 } : 'hang'));
    const hook = await stack.webhook(r, { events: ['policy.created'] });
    await failedEvents(hook.id, 8);
    down = false; // now every request hangs: the backlog stays full and the task waits
    const started = await call('POST', `/webhooks/${hook.id}/recover`, {
      since: new Date(Date.now() - 60_000).toISOString(),
    });
    await waitTask(hook.id, started.body.id, (t) => t.processed >= 3);
    expect((await call('POST', `/webhooks/${hook.id}/pause`)).status).toBe(200);
    const task = await waitTask(hook.id, started.body.id, (t) => t.status !== 'running');
    expect(task).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^webhook_paused: /),
      finished_at: expect.any(String),
    });
    expect(task.processed).toBeLessThan(8);
  });
});

describe('replay (CONTRACT 11)', () => {
  it('backfills webhooks created after the events: current subscription, condition, batching and format', async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const allow = await stack.ingest(
      [1, 2, 3].map((i) => auditEvent({ payload: { policy_name: `a${i}`, effect: 'allow' } })),
    );
    const [deny] = await stack.ingest([auditEvent({ payload: { policy_name: 'd', effect: 'deny' } })]);
    const [tag] = await stack.ingest([
      auditEvent({ action: 'tag.created', resource_type: 'tag', payload: { tag_name: 't', color: 'red' } }),
    ]);
    await new Promise((res) => setTimeout(res, 5)); // the webhooks are created strictly after the events were received

    const batching = await stack.receiver();
    const b = await stack.webhook(batching, {
      events: ['policy.created'],
      condition: 'event.payload.effect == "allow"',
      format: 'array',
      max_events: 10,
    });
    const single = await stack.receiver();
    const s = await stack.webhook(single, { events: ['policy.created', 'tag.created'] });

    const tb = await call('POST', `/webhooks/${b.id}/replay`, { since });
    expect(tb.status).toBe(202);
    const ts = await call('POST', `/webhooks/${s.id}/replay`, { since, until: tb.body.created_at });
    expect(ts.status).toBe(202);

    expect(await waitTask(b.id, tb.body.id, (t) => t.status !== 'running')).toMatchObject({
      status: 'succeeded',
      total: 4,
      processed: 4,
    });
    expect(await waitTask(s.id, ts.body.id, (t) => t.status !== 'running')).toMatchObject({
      status: 'succeeded',
      total: 5,
      processed: 5,
    });

    // The batching webhook: the three matching events, in array bodies ordered by event id; the denied one never.
    await batching.waitFor((reqs) => reqs.flatMap(eventIdOf).length >= 3);
    const batched = batching.requests.flatMap(eventIdOf);
    expect([...batched].sort()).toEqual([...allow].sort());
    expect(batched).not.toContain(deny);
    for (const q of batching.requests) expect(Array.isArray(JSON.parse(q.body))).toBe(true);

    // The single webhook: all five events, one per request, each under a new delivery id with data.id unchanged.
    await single.waitFor((reqs) => reqs.length >= 5);
    expect(single.requests.flatMap(eventIdOf).sort()).toEqual([...allow, deny!, tag!].sort());
    const deliveries = await stack.deliveries(
      s.id,
      (items) => items.length === 5 && items.every((d) => d.status === 'succeeded'),
    );
    expect(single.requests.map((q) => q.headers['webhook-id']).sort()).toEqual(deliveries.map((d) => d.id).sort());
  });

  it('replays an event again whatever happened to it before, as a new delivery', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { events: ['policy.created'] });
    const since = new Date().toISOString();
    const [id] = await stack.ingest([auditEvent()]);
    await r.waitFor((reqs) => reqs.length === 1);
    const started = await call('POST', `/webhooks/${hook.id}/replay`, { since });
    await waitTask(hook.id, started.body.id, (t) => t.status === 'succeeded');
    await r.waitFor((reqs) => reqs.length === 2);
    expect(r.requests.map(eventIdOf).flat()).toEqual([id, id]);
    expect(r.requests[0]!.headers['webhook-id']).not.toBe(r.requests[1]!.headers['webhook-id']);
  });
});

describe('durability', () => {
  it('a worker killed mid-task: another worker finishes the task from its cursor', async () => {
    let down = true;
    // Slow answers once up, so the task takes several seconds and can be killed in the middle.
    const r = await stack.receiver(async () => {
      if (down) return { status: 500 };
      await new Promise((res) => setTimeout(res, 300));
      return { status: 200 };
    });
    const hook = await stack.webhook(r, { events: ['policy.created'] });
    const lost = await failedEvents(hook.id, 24);

    // Only a separate worker process runs from now on; it is killed with SIGKILL while the task is half done.
    await stack.engine.stop();
    const c = stack.config;
    const worker = await startServiceProcess('worker', {
      DATABASE_URL: c.DATABASE_URL,
      REDIS_URL: c.REDIS_URL,
      REDIS_CLUSTER_NODES: c.REDIS_CLUSTER_NODES.join(','),
      REDIS_PREFIX: c.REDIS_PREFIX,
      NODE_ENV: 'test',
      EGRESS_ALLOW_CIDRS: c.EGRESS_ALLOW_CIDRS,
      EGRESS_EXTRA_CA_FILE: c.EGRESS_EXTRA_CA_FILE,
      DELIVERY_RETRY_SCHEDULE: c.DELIVERY_RETRY_SCHEDULE.join(','),
      DELIVERY_TIMEOUT_MS: String(c.DELIVERY_TIMEOUT_MS),
      RECONCILE_INTERVAL_MS: String(c.RECONCILE_INTERVAL_MS),
      ...TASK_ENV,
    });
    let second: Awaited<ReturnType<typeof startTestEngine>> | undefined;
    try {
      down = false;
      const started = await call('POST', `/webhooks/${hook.id}/recover`, {
        since: new Date(Date.now() - 120_000).toISOString(),
      });
      expect(started.status).toBe(202);
      const mid = await waitTask(hook.id, started.body.id, (t) => t.processed >= 6, 30_000);
      await worker.kill('SIGKILL');
      expect(mid.status).toBe('running');
      expect(mid.processed).toBeLessThan(24);

      second = await startTestEngine(c, { reconcilerGrace: { eventsMs: 500, deliveriesMs: 1000 } });
      const task = await waitTask(hook.id, started.body.id, (t) => t.status !== 'running', 40_000);
      expect(task).toMatchObject({ status: 'succeeded', total: 24, processed: 24 });
      await stack.deliveries(
        hook.id,
        (items) => items.length === 24 && items.every((d) => d.status === 'succeeded'),
        40_000,
      );
      // At least once: every lost event arrived (one in flight at the kill may have arrived twice).
      const answered = new Set(r.requests.filter((q) => q.at > Date.parse(started.body.created_at)).flatMap(eventIdOf));
      for (const id of lost) expect(answered.has(id)).toBe(true);
    } finally {
      await worker.kill();
      await second?.stop();
    }
  }, 120_000);
});
