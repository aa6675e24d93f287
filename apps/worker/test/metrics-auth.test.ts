import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { createWorkerServer } from '../src/http';

const token = 'worker-metrics-token-123';

describe('worker /metrics with METRICS_TOKEN', () => {
  const server = createWorkerServer({ checks: {}, metrics: new Registry(), metricsToken: token });
  let base = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers 401 in the contract error shape without the token, 200 with it', async () => {
    const refused = await fetch(`${base}/metrics`);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    expect((await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer wrong-token-0000000' } })).status).toBe(
      401,
    );
    const ok = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
  });

  it('keeps /healthz open', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});
