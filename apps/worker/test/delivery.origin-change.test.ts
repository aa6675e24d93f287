import type { ReceivedRequest } from '@gatehook/testkit/receiver';
import { auditEvent, useStack } from '@gatehook/testkit/stack';

// Secrets follow no URL (CONTRACT 15): a PATCH that moves a webhook to another origin needs every var and header
// value again, and what was rendered for the old receiver never reaches the new one. Real API, worker, receivers.
const stack = useStack();

const call = (method: string, path: string, body?: unknown) =>
  stack.api.call(method, path, { key: stack.org.admin, body });
const TEMPLATE = '{"id": {{ json .ID }}, "token": {{ json .Vars.token }}}';
const tokenOf = (request: ReceivedRequest): string => (JSON.parse(request.body) as { token: string }).token;

describe('a PATCH that moves the URL to another origin', () => {
  it('refuses blank (kept) values of vars and headers, and maps left out, naming each', async () => {
    const old = await stack.receiver();
    const moved = await stack.receiver();
    const hook = await stack.webhook(old, {
      events: ['policy.created'],
      template: TEMPLATE,
      vars: { token: 'old-var' },
      headers: { 'X-Token': 'old-header' },
    });
    const message = "must be supplied again when the URL's origin changes";
    const before = (await call('GET', `/webhooks/${hook.id}`)).body;

    const blank = await call('PATCH', `/webhooks/${hook.id}`, {
      url: moved.url('/hook'),
      vars: { token: '' },
      headers: { 'X-Token': '' },
    });
    expect(blank.status).toBe(422);
    expect(blank.body.error.code).toBe('validation_error');
    expect(blank.body.error.details).toEqual([
      { path: 'vars.token', message },
      { path: 'headers.X-Token', message },
    ]);
    // Leaving a map out would keep every value in it: refused alike.
    const absent = await call('PATCH', `/webhooks/${hook.id}`, { url: moved.url('/hook') });
    expect(absent.status).toBe(422);
    expect(absent.body.error.details).toEqual([
      { path: 'vars.token', message },
      { path: 'headers.X-Token', message },
    ]);
    // Nothing changed.
    expect((await call('GET', `/webhooks/${hook.id}`)).body).toEqual(before);
    expect(JSON.stringify(blank.body)).not.toContain('old-');
  });

  it('with every value supplied: 200, earlier deliveries are no longer retryable, and only new values go out', async () => {
    let mode: 'fail' | 'throttle' = 'fail';
    const old = await stack.receiver(() =>
      mode === 'fail' ? { status: 500 } : { status: 429, headers: { 'retry-after': '3600' } },
    );
    const moved = await stack.receiver();
    const hook = await stack.webhook(old, {
      events: ['policy.created'],
      template: TEMPLATE,
      vars: { token: 'old-var' },
      headers: { 'X-Token': 'old-header' },
    });
    const since = new Date(Date.now() - 1000).toISOString();

    // One delivery failed for good (retryable), one waiting on a 429 (pending, next attempt in an hour).
    await stack.ingest([auditEvent()]);
    const [failed] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');
    expect(failed!.retryable).toBe(true);
    mode = 'throttle';
    await stack.ingest([auditEvent()]);
    const waiting = await stack.deliveries(
      hook.id,
      (items) => items.length === 2 && items[0]!.status === 'pending' && items[0]!.attempt_count === 1,
    );
    const pendingId = waiting[0]!.id;

    const patched = await call('PATCH', `/webhooks/${hook.id}`, {
      url: moved.url('/hook'),
      vars: { token: 'new-var' },
      headers: { 'X-Token': 'new-header' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ vars: { token: '' }, headers: { 'X-Token': '' } });

    for (const id of [failed!.id, pendingId]) {
      const detail = await call('GET', `/webhooks/${hook.id}/deliveries/${id}`);
      expect(detail.body).toMatchObject({ status: 'failed', retryable: false, error: 'url_origin_changed' });
      const retry = await call('POST', `/webhooks/${hook.id}/deliveries/${id}/retry`);
      expect(retry.status).toBe(409);
      expect(retry.body.error.code).toBe('conflict');
    }
    // Recover finds nothing to send in the window.
    const recover = await call('POST', `/webhooks/${hook.id}/recover`, { since });
    expect(recover.status).toBe(202);
    for (;;) {
      const task = (await call('GET', `/webhooks/${hook.id}/tasks/${recover.body.id}`)).body as {
        status: string;
        total: number | null;
      };
      if (task.status !== 'running') {
        expect(task).toMatchObject({ status: 'succeeded', total: 0 });
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }

    // The next delivery and the test send carry the new values only, to the new receiver.
    const [next] = await stack.ingest([auditEvent()]);
    await moved.waitFor((requests) => requests.length === 1);
    const test = await call('POST', `/webhooks/${hook.id}/test`);
    expect(test.body.success).toBe(true);
    await moved.waitFor((requests) => requests.length === 2);
    await stack.settle([next!]);
    for (const request of moved.requests) {
      expect(tokenOf(request)).toBe('new-var');
      expect(request.headers['x-token']).toBe('new-header');
      expect(request.body).not.toContain('old-var');
    }
    // The old receiver got nothing after the change: the deliveries made for it were not sent anywhere.
    expect(old.requests.every((r) => tokenOf(r) === 'old-var')).toBe(true);
    expect(moved.requests.map((r) => r.headers['webhook-id'])).not.toContain(failed!.id);
    expect(moved.requests.map((r) => r.headers['webhook-id'])).not.toContain(pendingId);
  });

  it('a change within the origin keeps blank values, and earlier deliveries stay retryable', async () => {
    const old = await stack.receiver(() => ({ status: 500 }));
    const hook = await stack.webhook(old, {
      events: ['policy.created'],
      template: TEMPLATE,
      vars: { token: 'kept-var' },
      headers: { 'X-Token': 'kept-header' },
    });
    await stack.ingest([auditEvent()]);
    const [failed] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');

    const patched = await call('PATCH', `/webhooks/${hook.id}`, {
      url: old.url('/other-path'),
      vars: { token: '' },
      headers: { 'X-Token': '' },
    });
    expect(patched.status).toBe(200);
    const detail = await call('GET', `/webhooks/${hook.id}/deliveries/${failed!.id}`);
    expect(detail.body).toMatchObject({ status: 'failed', retryable: true });

    const test = await call('POST', `/webhooks/${hook.id}/test`);
    expect(test.body.status_code).toBe(500);
    const last = old.requests.at(-1)!;
    expect(last.path).toBe('/other-path');
    expect(tokenOf(last)).toBe('kept-var');
    expect(last.headers['x-token']).toBe('kept-header');
  });
});
