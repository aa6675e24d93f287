import { randomUUID } from 'node:crypto';
import { request } from 'node:https';
import { performance } from 'node:perf_hooks';
import type { AuditEventData } from '@gatehook/core/audit-event';
import { packBodies } from '@gatehook/delivery/render/bodies';
import { renderEnvelope } from '@gatehook/delivery/render/envelope';
import { startReceiverProcess, type ReceiverProcess } from './receiver-process';
import { testCa } from './receiver';
import { auditEvent } from './stack';
import { until } from './until';

// An ingested event as the worker renders it: the gateway's fields and those the API adds.
const event = (): AuditEventData => ({
  ...(auditEvent({ resources: {}, context: {}, changes: [] }) as Omit<AuditEventData, 'id' | 'org_id' | 'created_at'>),
  id: randomUUID(),
  org_id: randomUUID(),
  created_at: new Date().toISOString(),
});

/** POSTs `body` to `url` over a fresh connection; resolves to the status, rejects if the connection is cut. */
function post(url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', ca: testCa().pki.caPem, agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('startReceiverProcess', () => {
  let receiver: ReceiverProcess | undefined;
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  it("runs in another process and reports the first arrival of each event id in this process's time", async () => {
    receiver = await startReceiverProcess();
    expect(receiver.pid).not.toBe(process.pid);
    const single = event();
    const before = performance.now();
    expect(await post(receiver.url('/single'), renderEnvelope(single))).toBe(200);
    const after = performance.now();
    await until(
      async () => receiver!.arrivals.has(single.id),
      (has) => has,
    );
    const first = receiver.arrivals.get(single.id)!;
    expect(first).toBeGreaterThanOrEqual(before);
    expect(first).toBeLessThanOrEqual(after);

    // An ndjson body counts each of its events; a redelivered event keeps its first arrival.
    const [a, b] = [event(), event()];
    const ndjson = packBodies(
      'ndjson',
      [a, b, single].map((e) => ({ eventId: e.id, json: renderEnvelope(e) })),
      100,
    ).bodies[0]!.body;
    expect(await post(receiver.url('/ndjson'), ndjson)).toBe(200);
    await until(
      async () => receiver!.arrivals.size,
      (size) => size === 3,
    );
    expect(receiver.arrivals.get(single.id)).toBe(first);
    expect([...receiver.arrivals.keys()].sort()).toEqual([single.id, a.id, b.id].sort());
  });

  it('never answers at a hanging path, cuts those requests when it closes, and exits', async () => {
    receiver = await startReceiverProcess({ hang: ['/never'] });
    const hanging = event();
    const cut = post(receiver.url('/never'), renderEnvelope(hanging)).then(
      (status) => `answered ${status}`,
      () => 'cut',
    );
    // A request sent after it is answered and recorded while the first still waits.
    const answered = event();
    expect(await post(receiver.url('/ok'), renderEnvelope(answered))).toBe(200);
    await until(
      async () => receiver!.arrivals.has(answered.id),
      (has) => has,
    );
    expect(receiver.arrivals.has(hanging.id)).toBe(false);

    const { pid } = receiver;
    await receiver.close();
    expect(await cut).toBe('cut');
    expect(alive(pid)).toBe(false);
  });
});
