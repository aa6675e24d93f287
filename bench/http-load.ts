// A lean HTTP load generator run as its own process (so it does not share an event loop with anything it
// measures): keep-alive connections, one request in flight per connection. Two modes:
//  - closed: `concurrency` connections each sending the next request when the previous answers (throughput);
//  - open: requests leave on a fixed schedule at `rate`/s whatever the answers (latency at a given load).
// Input: one JSON document on stdin; output: one JSON line {requests, errors, seconds, perSecond, latenciesMs: {p50, p99, max}}.
import { readFileSync } from 'node:fs';
import http from 'node:http';

interface LoadSpec {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** Bodies sent in turn (POST). */
  bodies?: string[];
  /** Paths of `url`'s origin requested in turn instead of its own path. */
  paths?: string[];
  mode: 'closed' | 'open';
  concurrency?: number;
  rate?: number;
  seconds: number;
  warmupSeconds?: number;
  /** The status a request must answer to count as a success (default 200). */
  expectStatus?: number;
}

// The spec arrives on stdin: bodies may be larger than one command-line argument may be (128 KiB on Linux).
const spec = JSON.parse(readFileSync(0, 'utf8')) as LoadSpec;
const url = new URL(spec.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.mode === 'closed' ? spec.concurrency! : 256 });
let next = 0;
let nextPath = 0;
const expected = spec.expectStatus ?? 200;

function send(): Promise<number> {
  const body = spec.bodies ? spec.bodies[next++ % spec.bodies.length]! : undefined;
  const requestPath = spec.paths ? spec.paths[nextPath++ % spec.paths.length]! : url.pathname;
  return new Promise((resolve, reject) => {
    const req = http.request(
      { agent, host: url.hostname, port: url.port, path: requestPath, method: spec.method, headers: body ? { ...spec.headers, 'content-length': Buffer.byteLength(body) } : spec.headers },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function closed(seconds: number): Promise<{ latencies: number[]; errors: number; elapsed: number }> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: spec.concurrency! }, async () => {
      while (performance.now() < until) {
        const sent = performance.now();
        const status = await send().catch(() => 0);
        if (status !== expected) errors += 1;
        latencies.push(performance.now() - sent);
      }
    }),
  );
  return { latencies, errors, elapsed: (performance.now() - started) / 1000 };
}

async function open(seconds: number): Promise<{ latencies: number[]; errors: number; elapsed: number }> {
  const total = Math.round(spec.rate! * seconds);
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i += 1) {
    const due = started + (i * 1000) / spec.rate!;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    // Latency from when the request was due, so a late send counts against the server's answer (no omission);
    // one sent up to a millisecond early (timers are that coarse) counts from when it left.
    const from = Math.min(due, performance.now());
    pending.push(
      send().then(
        (status) => {
          if (status !== expected) errors += 1;
          latencies.push(performance.now() - from);
        },
        () => {
          errors += 1;
        },
      ),
    );
  }
  await Promise.all(pending);
  return { latencies, errors, elapsed: (performance.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const run = spec.mode === 'closed' ? closed : open;
  if (spec.warmupSeconds) await run(spec.warmupSeconds);
  const { latencies, errors, elapsed } = await run(spec.seconds);
  latencies.sort((a, b) => a - b);
  const at = (p: number) => Number((latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0).toFixed(2));
  process.stdout.write(`${JSON.stringify({ requests: latencies.length, errors, seconds: elapsed, perSecond: Math.round(latencies.length / elapsed), latenciesMs: { p50: at(50), p99: at(99), max: at(100) } })}\n`);
  agent.destroy();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
