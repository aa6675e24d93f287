// The egress client's own cost: CPU per signed POST of the worker's HTTP client (packages/egress, built on got)
// next to a bare node:https request over a keep-alive agent with the same settings, both to one HTTPS receiver in
// a process of its own (so this process's CPU is the sender's alone), 50 requests in flight, alternating twice.
// It says how much of the worker's CPU per delivery (bench/delivery.ts, "worker alone") is the client library.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:https';
import { parseCidrList } from '@gatehook/egress/address-policy';
import { createEgressClient } from '@gatehook/egress/client';
import { freePort } from '@gatehook/testkit/processes';
import { testCa } from '@gatehook/testkit/receiver';
import { callsUntil, type Figure } from './measure';

const IN_FLIGHT = 50;
const ROUNDS = 2;

// Answers 200 "ok" to every request, on 127.0.0.1, with the test CA's certificate given in its environment.
const RECEIVER = `
const https = require('node:https');
https.createServer({ key: process.env.KEY, cert: process.env.CERT }, (req, res) => {
  req.resume();
  req.on('end', () => res.end('ok'));
}).listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

/** CPU µs of this process per call of `send`, IN_FLIGHT at a time, over about `seconds`. */
async function cpuPerRequest(send: () => Promise<void>, seconds: number): Promise<number> {
  await callsUntil(send, performance.now() + 1000, IN_FLIGHT); // connections open, JIT warm
  const before = process.cpuUsage();
  const count = await callsUntil(send, performance.now() + seconds * 1000, IN_FLIGHT);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

export async function egressFigures(seconds: number): Promise<Figure[]> {
  const { pki } = testCa();
  const port = await freePort();
  const receiver = spawn(process.execPath, ['-e', RECEIVER], {
    env: { KEY: pki.keyPem, CERT: pki.certPem, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = `https://127.0.0.1:${port}/hook`;
  const client = createEgressClient({
    allow: parseCidrList('127.0.0.1/32'),
    extraCaPem: pki.caPem,
    timeoutMs: 2000,
    userAgent: 'gatehook-bench',
    maxSocketsPerOrigin: IN_FLIGHT,
  });
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT, timeout: 4_000, ca: pki.caPem });
  try {
    await once(receiver.stdout!, 'data');
    const body = JSON.stringify({
      type: 'tool.called',
      timestamp: new Date().toISOString(),
      data: { id: '00000000-0000-4000-8000-000000000000', note: 'x'.repeat(600) },
    });
    const headers = {
      'content-type': 'application/json',
      'webhook-id': 'msg_bench',
      'webhook-timestamp': '1700000000',
      'webhook-signature': `v1,${'s'.repeat(44)}`,
    };
    const viaClient = async () => {
      const result = await client.send({ url, headers, body });
      if (result.statusCode !== 200) throw new Error(`egress client: ${result.statusCode} ${result.error}`);
    };
    const bare = () =>
      new Promise<void>((resolve, reject) => {
        const req = request(
          url,
          {
            method: 'POST',
            agent,
            headers: { ...headers, 'user-agent': 'gatehook-bench', 'content-length': Buffer.byteLength(body) },
          },
          (res) => {
            res.resume();
            res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`bare: ${res.statusCode}`))));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const measured = { client: [] as number[], bare: [] as number[] };
    for (let round = 0; round < ROUNDS; round += 1) {
      measured.bare.push(await cpuPerRequest(bare, seconds));
      measured.client.push(await cpuPerRequest(viaClient, seconds));
    }
    const mean = (values: number[]) => Number((values.reduce((a, b) => a + b, 0) / values.length).toFixed(1));
    const value = mean(measured.client);
    const referenceValue = mean(measured.bare);
    return [
      {
        figure: `CPU µs per signed POST of the egress client (got; ${IN_FLIGHT} in flight, keep-alive, receiver in its own process; lower is better)`,
        value,
        unit: 'µs',
        reference: 'bare node:https request, same agent settings, same receiver, alternating',
        referenceValue,
        ratio: Number((value / referenceValue).toFixed(4)),
      },
    ];
  } finally {
    await client.close();
    agent.destroy();
    receiver.kill();
  }
}
