import { sendChunk } from '@gatehook/delivery/tasks/pacing';
import type { ReceivedRequest } from '@gatehook/testkit/receiver';
import { auditEvent, useStack } from '@gatehook/testkit/stack';

// Recover and replay under a send rate (TASK_SEND_RATE, docs/recover-replay.md "Pacing"): the real API and worker
// engine, HTTPS receivers, a rate low enough that an unpaced task would visibly break it. What is measured is what
// the receiver saw: the time each request arrived.
const RATE = 10;
const SENDS = 40;
const stack = useStack({ TASK_SEND_RATE: String(RATE) });

const call = (method: string, path: string, body?: unknown) =>
  stack.api.call(method, path, { key: stack.org.admin, body });

async function waitTask(
  webhookId: string,
  taskId: string,
): Promise<{ status: string; total: number | null; processed: number }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const task = (await call('GET', `/webhooks/${webhookId}/tasks/${taskId}`)).body;
    if (task.status !== 'running') return task;
    if (Date.now() > deadline) throw new Error(`task still running: ${JSON.stringify(task)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The bound a paced task keeps, from the receiver's timestamps: in no window of a second do more requests arrive
 * than the rate allows plus one chunk, with a second of slack for a process that stalls (the event loop of this
 * test process runs the engine too): sends that fell due during a stall go out together when it ends. And the
 * whole set takes at least as long as the rate allows, less that slack. An unpaced task sends all 40 within a few
 * hundred milliseconds and fails both.
 */
function expectPaced(arrivals: readonly number[]): void {
  const times = [...arrivals].sort((a, b) => a - b);
  const slackMs = 1000;
  const busiestSecond = Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + 1000).length));
  expect(busiestSecond).toBeLessThanOrEqual(RATE * ((1000 + slackMs) / 1000) + sendChunk(RATE));
  expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(((times.length - sendChunk(RATE)) / RATE) * 1000 - slackMs);
}

describe('pacing (TASK_SEND_RATE)', () => {
  it('a recovery reaches its receiver no faster than the rate, every failed delivery once with its webhook-id', async () => {
    let down = true;
    const r = await stack.receiver(() => (down ? { status: 500 } : { status: 200 }));
    const hook = await stack.webhook(r, { events: ['policy.created'] });
    const since = new Date(Date.now() - 1000).toISOString();
    await stack.ingest(
      Array.from({ length: SENDS }, (_, i) => auditEvent({ payload: { policy_name: `p${i}`, effect: 'allow' } })),
    );
    const failed = await stack.deliveries(
      hook.id,
      (items) => items.length === SENDS && items.every((d) => d.status === 'failed'),
      60_000,
    );

    down = false;
    const sentBefore = r.requests.length;
    const started = await call('POST', `/webhooks/${hook.id}/recover`, { since });
    expect(started.status).toBe(202);
    expect(await waitTask(hook.id, started.body.id)).toMatchObject({
      status: 'succeeded',
      total: SENDS,
      processed: SENDS,
    });
    await r.waitFor((reqs) => reqs.length >= sentBefore + SENDS, 30_000);
    await stack.deliveries(hook.id, (items) => items.every((d) => d.status === 'succeeded'), 30_000);

    const recovered: ReceivedRequest[] = r.requests.slice(sentBefore);
    expect(recovered.map((q) => q.headers['webhook-id']).sort()).toEqual(failed.map((d) => d.id).sort());
    expectPaced(recovered.map((q) => q.at));
  }, 120_000);

  it('a replay is paced the same way', async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const events = await stack.ingest(
      Array.from({ length: SENDS }, (_, i) => auditEvent({ payload: { policy_name: `r${i}`, effect: 'allow' } })),
    );
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { events: ['policy.created'] });

    const started = await call('POST', `/webhooks/${hook.id}/replay`, { since });
    expect(started.status).toBe(202);
    expect(await waitTask(hook.id, started.body.id)).toMatchObject({ status: 'succeeded' });
    await r.waitFor((reqs) => reqs.length >= SENDS, 30_000);

    const replayed = r.requests.map((q) => (JSON.parse(q.body) as { data: { id: string } }).data.id);
    expect(replayed.filter((id) => events.includes(id)).sort()).toEqual([...events].sort());
    expectPaced(
      r.requests
        .filter((q) => events.includes((JSON.parse(q.body) as { data: { id: string } }).data.id))
        .map((q) => q.at),
    );
  }, 120_000);
});
