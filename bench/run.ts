// `pnpm bench`: every benchmark, printed as a table (figure, value, unit, the reference measured in the same run,
// ratio) and written to bench/results/latest.json. Numbers never fail anything; BENCH_SECONDS sets the time per
// measurement (CI may run a tiny size); BENCH_ONLY picks groups.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deliveryFigures } from './delivery';
import { egressFigures } from './egress';
import { fairnessFigures } from './fairness';
import { expressionFigures } from './expressions';
import { ingestionFigures } from './ingestion';
import { oauthFigures } from './oauth';
import { grpcRateLimitFigures, rateLimitFigures } from './ratelimit';
import { recoverFigures } from './recover';
import { requestViewFigures } from './request-view';
import { retentionFigures } from './retention';
import { scaleFigures } from './scale';
import { tracingFigures } from './tracing';
import type { Figure } from './measure';

const seconds = Number(process.env.BENCH_SECONDS ?? 2);

/** The benchmark groups, in the order they run; BENCH_ONLY=ingestion,delivery runs some of them. */
const GROUPS: Record<string, (seconds: number) => Figure[] | Promise<Figure[]>> = {
  expressions: expressionFigures,
  ratelimit: rateLimitFigures,
  grpc: grpcRateLimitFigures,
  ingestion: ingestionFigures,
  delivery: deliveryFigures,
  tracing: tracingFigures,
  fairness: fairnessFigures,
  'request-view': requestViewFigures,
  egress: egressFigures,
  oauth: oauthFigures,
  recover: recoverFigures,
  retention: retentionFigures,
  scale: scaleFigures,
};
/**
 * Groups that run only when BENCH_ONLY names them: retention seeds millions of rows (minutes); scale runs two
 * stacks of up to 4 worker processes each, one of them on a Redis Cluster (minutes).
 */
const OPT_IN = new Set(['retention', 'scale']);
const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null;

async function main(): Promise<void> {
  const figures: Figure[] = [];
  for (const [name, run] of Object.entries(GROUPS))
    if (only === null ? !OPT_IN.has(name) : only.has(name)) figures.push(...(await run(seconds)));
  const rows = figures.map((f) => [
    f.note ? `${f.figure} [${f.note}]` : f.figure,
    f.value.toLocaleString('en-US'),
    f.unit,
    f.reference === null ? '—' : `${f.reference}: ${f.referenceValue!.toLocaleString('en-US')}`,
    f.ratio === null ? '—' : f.ratio.toFixed(3),
  ]);
  const header = ['figure', 'value', 'unit', 'reference (same run)', 'ratio'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));

  const machine = {
    node: process.version,
    cpus: os.cpus().length,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  };
  const out = path.join(__dirname, 'results');
  mkdirSync(out, { recursive: true });
  writeFileSync(
    path.join(out, 'latest.json'),
    `${JSON.stringify({ at: new Date().toISOString(), machine, seconds, figures }, null, 2)}\n`,
  );
  console.log(`\nwritten to bench/results/latest.json (${machine.cpus} × ${machine.cpu}, Node ${machine.node})`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
