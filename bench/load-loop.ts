// The two load shapes of the load generators (bench/http-load.ts, bench/grpc-load.ts), whatever they send:
//  - closed: `concurrency` requests in flight, each followed by the next when it answers (throughput);
//  - open: requests leave on a fixed schedule at `rate`/s whatever the answers (latency at a given load).

export interface LoadShape {
  mode: 'closed' | 'open';
  concurrency?: number;
  rate?: number;
  seconds: number;
  warmupSeconds?: number;
}

/** What a load generator prints: one JSON line of this. */
export interface LoadOutcome {
  requests: number;
  errors: number;
  seconds: number;
  perSecond: number;
  latenciesMs: { p50: number; p99: number; max: number };
}

type Run = { latencies: number[]; errors: number; elapsed: number };

/** `send` resolves to whether the request succeeded; it never rejects. */
async function closed(shape: LoadShape, seconds: number, send: () => Promise<boolean>): Promise<Run> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: shape.concurrency! }, async () => {
      while (performance.now() < until) {
        const sent = performance.now();
        if (!(await send())) errors += 1;
        latencies.push(performance.now() - sent);
      }
    }),
  );
  return { latencies, errors, elapsed: (performance.now() - started) / 1000 };
}

async function open(shape: LoadShape, seconds: number, send: () => Promise<boolean>): Promise<Run> {
  const total = Math.round(shape.rate! * seconds);
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i += 1) {
    const due = started + (i * 1000) / shape.rate!;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    // Latency from when the request was due, so a late send counts against the server's answer (no omission);
    // one sent up to a millisecond early (timers are that coarse) counts from when it left.
    const from = Math.min(due, performance.now());
    pending.push(
      send().then((ok) => {
        if (!ok) errors += 1;
        latencies.push(performance.now() - from);
      }),
    );
  }
  await Promise.all(pending);
  return { latencies, errors, elapsed: (performance.now() - started) / 1000 };
}

/** Runs the warm-up, then the measured load, and summarises it. */
export async function runLoad(shape: LoadShape, send: () => Promise<boolean>): Promise<LoadOutcome> {
  const run = shape.mode === 'closed' ? closed : open;
  if (shape.warmupSeconds) await run(shape, shape.warmupSeconds, send);
  const { latencies, errors, elapsed } = await run(shape, shape.seconds, send);
  latencies.sort((a, b) => a - b);
  const at = (p: number) =>
    Number((latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0).toFixed(2));
  return {
    requests: latencies.length,
    errors,
    seconds: elapsed,
    perSecond: Math.round(latencies.length / elapsed),
    latenciesMs: { p50: at(50), p99: at(99), max: at(100) },
  };
}
