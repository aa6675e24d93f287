// The cost of traces (CONTRACT 17), in one rig and back to back: end-to-end delivery throughput with tracing off
// (the default: no OTLP endpoint), on (API and worker restarted with OTEL_EXPORTER_OTLP_ENDPOINT at a local
// OTLP/HTTP collector, protobuf, every span exported), and off again, each run on freshly started processes, so
// neither state gets the other's warm-up; and what the tracing hooks of one attempt cost when off, against the
// time a delivery takes end to end.
import { parseConfig } from '@gatehook/core/config';
import { attemptSpan, currentTraceparent, inSpan, startTracing, type AttemptSpan } from '@gatehook/core/tracing';
import { startOtlpCollector } from '@gatehook/testkit/otlp-collector';
import { arrivalsPerSecond, figure, ingestFeed, withRig } from './delivery';
import { throughput, type Figure } from './measure';

// Both endpoint variables empty: unset, whatever the bench's own environment says.
const OFF = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' };
// Short windows: the two runs are compared with each other, not with the delivery group's figures.
const WARMUP_MS = 2_000;
const EVENTS_PER_REQUEST = 100;
// Small, so each run drains in a moment before the processes are replaced.
const BACKLOG = 500;

const ATTEMPT = {
  orgId: '0192e0a0-0000-7000-8000-000000000001',
  webhookId: '0192e0a0-0000-7000-8000-000000000002',
  deliveryId: '0192e0a0-0000-7000-8000-000000000003',
  origin: 'https://receiver.example',
};
const HEADERS = { 'webhook-id': ATTEMPT.deliveryId };
const OUTCOME = { statusCode: 200, error: null };
const EMPTY: AttemptSpan = { headers: (headers) => headers, end: () => undefined };
const emptySpan = (_attempt: typeof ATTEMPT) => EMPTY;
const emptyTraceparent = (): string | undefined => undefined;

/** What an attempt calls of the tracing module (attempt.ts, jobs.ts), with `span` and `parent` as given. */
function hooks(span: (attempt: typeof ATTEMPT) => AttemptSpan, parent: () => string | undefined): () => unknown {
  return () => {
    const s = span(ATTEMPT);
    const sent = s.headers(HEADERS);
    s.end(OUTCOME);
    return parent() ?? sent;
  };
}

export async function tracingFigures(seconds: number): Promise<Figure[]> {
  // This process never starts tracing: the hooks are off here.
  const hooksOff = throughput(
    'tracing hooks of one attempt with tracing off (span, headers, end, traceparent for the next job)',
    'ops/s',
    hooks(attemptSpan, currentTraceparent),
    'the same calls to empty functions',
    hooks(emptySpan, emptyTraceparent),
    Math.min(seconds, 1),
  );
  const collector = await startOtlpCollector();
  try {
    // The same calls with this process traced, inside a parent span as in a deliver job (the batch processor drops
    // what its queue cannot hold: this is the cost of making spans, not of exporting them).
    const tracing = await startTracing(
      parseConfig({ NODE_ENV: 'test', OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint }),
      'gatehook-bench',
    );
    let hooksOn: Figure;
    try {
      hooksOn = await inSpan('gatehook.fanout', undefined, {}, async () =>
        throughput(
          'tracing hooks of one attempt with tracing on (a recorded span)',
          'ops/s',
          hooks(attemptSpan, currentTraceparent),
          'the same calls to empty functions',
          hooks(emptySpan, emptyTraceparent),
          Math.min(seconds, 1),
        ),
      );
    } finally {
      await tracing.stop();
    }
    collector.requests.length = 0;
    const endToEnd = await withRig(async (rig) => {
      const receiver = await rig.receiver();
      const org = await rig.org();
      await org.webhook(receiver.url('/traces'));
      const feed = () => ingestFeed(org, receiver, EVENTS_PER_REQUEST, BACKLOG);

      const runWith = async (env: Record<string, string>) => {
        await rig.restartApi(env);
        const worker = await rig.startWorker(env);
        try {
          return await arrivalsPerSecond(receiver, seconds, feed(), undefined, WARMUP_MS);
        } finally {
          await rig.stop(worker);
        }
      };
      const on = {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_BSP_SCHEDULE_DELAY: '1000',
      };
      const before = await runWith(OFF);
      const traced = await runWith(on);
      const after = await runWith(OFF);
      const off = Math.round((before + after) / 2);
      const exportedKiB = Math.round(collector.requests.reduce((n, r) => n + r.body.length, 0) / 1024);
      const run = `API + 1 worker, ${WARMUP_MS / 1000} s warm-up, ${EVENTS_PER_REQUEST} events a POST /audit-events from 4 clients`;
      return [
        {
          ...figure(
            `end-to-end deliveries/s, tracing off (the default: no OTLP endpoint; mean of a run before and one after the traced run; ${run})`,
            off,
            'deliveries/s',
            'the same with tracing on, same rig, between them',
            traced,
          ),
          note: `before ${before.toLocaleString('en-US')}, after ${after.toLocaleString('en-US')}`,
        },
        {
          ...figure(
            `end-to-end deliveries/s, tracing on (every span exported over OTLP/HTTP protobuf to a local collector; ${run})`,
            traced,
            'deliveries/s',
            'tracing off, same rig, mean of the runs before and after',
            off,
          ),
          note: `${collector.requests.length} exports, ${exportedKiB.toLocaleString('en-US')} KiB`,
        },
        figure(
          'tracing off: ns of one attempt spent in the tracing hooks (lower is better)',
          Number((1e9 / hooksOff.value).toFixed(1)),
          'ns',
          'ns of one delivery end to end, tracing off (1 s / deliveries/s above)',
          Math.round(1e9 / off),
        ),
      ];
    });
    return [hooksOff, hooksOn, ...endToEnd];
  } finally {
    await collector.close();
  }
}
