import { randomBytes } from 'node:crypto';
import { inSpan, startTracing } from '@gatehook/core/tracing';
import { testConfig } from '@gatehook/testkit/api';
import { startOtlpCollector, type CollectedSpan, type OtlpCollector } from '@gatehook/testkit/otlp-collector';
import { auditEvent, startStack, type Stack } from '@gatehook/testkit/stack';
import { until } from '@gatehook/testkit/until';

// Traces (CONTRACT 17) end to end: the real API and worker engine exporting to an OTLP/HTTP collector started here.
// API and engine share this process, so they share one tracer (one service name); each stack has its own tracing.

// OTLP span kinds.
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

// Values that must never reach a span: a receiver URL's path and query, a custom header's value, the event body.
const PATH_SECRET = `path-secret-${randomBytes(4).toString('hex')}`;
const QUERY_SECRET = `query-secret-${randomBytes(4).toString('hex')}`;
const HEADER_SECRET = `header-secret-${randomBytes(4).toString('hex')}`;
const BODY_SECRET = `body-secret-${randomBytes(4).toString('hex')}`;

const newTraceparent = () => {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, header: `00-${traceId}-${parentId}-01` };
};

function only(spans: CollectedSpan[], name: string): CollectedSpan {
  const found = spans.filter((s) => s.name === name);
  if (found.length !== 1)
    throw new Error(`expected one ${name} span, got ${found.length}: ${JSON.stringify(spans.map((s) => s.name))}`);
  return found[0]!;
}

describe('without an OTLP endpoint', () => {
  let collector: OtlpCollector;
  let stack: Stack;

  beforeAll(async () => {
    collector = await startOtlpCollector();
    // Every standard variable but an endpoint: nothing is started.
    stack = await startStack({
      OTEL_SERVICE_NAME: 'gatehook-untraced',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '10',
    });
  });
  afterAll(async () => {
    await stack?.close();
    await collector?.close();
  });

  it('starts no SDK, exports nothing and sends no traceparent, even when the gateway sent one', async () => {
    expect(stack.tracing.enabled).toBe(false);
    const r = await stack.receiver();
    await stack.webhook(r, { events: ['policy.created'] });
    const { header } = newTraceparent();
    const res = await stack.api.call('POST', '/audit-events', {
      key: stack.org.admin,
      headers: { traceparent: header },
      body: { events: [auditEvent()] },
    });
    expect(res.status).toBe(202);
    await r.waitFor((reqs) => reqs.length === 1);
    await stack.settle(res.body.ids);
    expect(r.requests[0]!.headers.traceparent).toBeUndefined();
    await stack.tracing.flush();
    expect(collector.requests).toHaveLength(0);
  });
});

describe('with OTEL_EXPORTER_OTLP_ENDPOINT set (http/json)', () => {
  let collector: OtlpCollector;
  let stack: Stack;

  beforeAll(async () => {
    collector = await startOtlpCollector();
    stack = await startStack({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'gatehook-traced',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
  });
  afterAll(async () => {
    await stack?.close();
    await collector?.close();
  });

  it('puts ingestion, fan-out, batch flush and each attempt under the gateway traceparent, and sends each attempt its own', async () => {
    expect(stack.tracing.enabled).toBe(true);
    const r = await stack.receiver();
    const direct = await stack.webhook(
      r,
      { events: ['policy.created'], headers: { 'X-Team-Token': HEADER_SECRET } },
      `/direct/${PATH_SECRET}?token=${QUERY_SECRET}`,
    );
    // One event for a batch of two: it goes out after the linger, from a batch flush.
    const batched = await stack.webhook(
      r,
      { events: ['policy.created'], format: 'array', max_events: 2 },
      `/batched/${PATH_SECRET}`,
    );
    const { traceId, parentId, header } = newTraceparent();
    const res = await stack.api.call('POST', '/audit-events', {
      key: stack.org.admin,
      headers: { traceparent: header },
      body: { events: [auditEvent({ payload: { policy_name: BODY_SECRET, effect: 'allow' } })] },
    });
    expect(res.status).toBe(202);
    await r.waitFor((reqs) => reqs.length === 2);

    const spans = await until(
      async () => collector.spans().filter((s) => s.traceId === traceId),
      (found) =>
        found.filter((s) => s.name === 'gatehook.delivery.attempt').length === 2 &&
        found.some((s) => s.name === 'POST /audit-events'),
    );
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['gatehook-traced']));

    const ingestion = only(spans, 'POST /audit-events');
    expect(ingestion).toMatchObject({ parentSpanId: parentId, kind: SERVER });
    expect(ingestion.attributes).toMatchObject({
      'http.route': '/audit-events',
      'http.response.status_code': 202,
      'gatehook.event.count': 1,
      'gatehook.org.id': stack.org.orgId,
    });

    const fanout = only(spans, 'gatehook.fanout');
    expect(fanout).toMatchObject({ parentSpanId: ingestion.spanId, kind: CONSUMER });
    expect(fanout.attributes).toMatchObject({
      'gatehook.org.id': stack.org.orgId,
      'gatehook.event.count': 1,
      'gatehook.delivery.count': 1,
    });

    const flush = only(spans, 'gatehook.batch.flush');
    expect(flush).toMatchObject({ parentSpanId: fanout.spanId, kind: CONSUMER });
    expect(flush.attributes).toMatchObject({ 'gatehook.webhook.id': batched.id, 'gatehook.delivery.count': 1 });

    const attempts = spans.filter((s) => s.name === 'gatehook.delivery.attempt');
    const directAttempt = attempts.find((s) => s.attributes['gatehook.webhook.id'] === direct.id)!;
    const batchAttempt = attempts.find((s) => s.attributes['gatehook.webhook.id'] === batched.id)!;
    expect(directAttempt).toMatchObject({ parentSpanId: fanout.spanId, kind: CLIENT, statusCode: 0 });
    expect(batchAttempt).toMatchObject({ parentSpanId: flush.spanId, kind: CLIENT });
    for (const attempt of [directAttempt, batchAttempt]) {
      expect(attempt.attributes).toMatchObject({
        'http.response.status_code': 200,
        'url.scheme': 'https',
        'server.address': '127.0.0.1',
        'gatehook.org.id': stack.org.orgId,
      });
      expect(attempt.attributes['gatehook.delivery.id']).toMatch(/^[0-9a-f-]{36}$/);
    }

    // Each request carried the traceparent of its own attempt's span.
    const sentTo = (prefix: string) => r.requests.find((q) => q.path.startsWith(prefix))!.headers.traceparent;
    expect(sentTo('/direct/')).toBe(`00-${traceId}-${directAttempt.spanId}-01`);
    expect(sentTo('/batched/')).toBe(`00-${traceId}-${batchAttempt.spanId}-01`);

    // Nothing secret in any export: no URL path or query, header value, body, signing secret or API key.
    const exported = collector.requests.map((q) => q.body.toString('utf8')).join('\n');
    for (const secret of [
      PATH_SECRET,
      QUERY_SECRET,
      HEADER_SECRET,
      BODY_SECRET,
      direct.secret,
      batched.secret,
      stack.org.admin,
    ]) {
      expect(exported).not.toContain(secret);
    }
    for (const span of spans)
      for (const value of Object.values(span.attributes)) expect(String(value)).not.toMatch(/\/(direct|batched)\//);
  });

  it('puts a retry in the same trace, beside the failed attempt, which carries its error code', async () => {
    const r = await stack.receiver((_request, index) => (index === 0 ? { status: 503 } : { status: 200 }));
    const hook = await stack.webhook(r, { events: ['policy.created'] });
    const { traceId, header } = newTraceparent();
    const res = await stack.api.call('POST', '/audit-events', {
      key: stack.org.admin,
      headers: { traceparent: header },
      body: auditEvent(),
    });
    expect(res.status).toBe(202);
    await r.waitFor((reqs) => reqs.length === 2);
    const spans = await until(
      async () => collector.spans().filter((s) => s.traceId === traceId),
      (found) =>
        found.filter((s) => s.name === 'gatehook.delivery.attempt' && s.attributes['gatehook.webhook.id'] === hook.id)
          .length === 2,
    );
    const fanout = only(spans, 'gatehook.fanout');
    const attempts = spans.filter(
      (s) => s.name === 'gatehook.delivery.attempt' && s.attributes['gatehook.webhook.id'] === hook.id,
    );
    const failed = attempts.find((s) => s.attributes['http.response.status_code'] === 503)!;
    const retried = attempts.find((s) => s.attributes['http.response.status_code'] === 200)!;
    expect(failed).toMatchObject({ parentSpanId: fanout.spanId, statusCode: 2 });
    expect(failed.attributes).toMatchObject({ 'gatehook.attempt.error': 'http_503', 'error.type': 'http_503' });
    expect(retried).toMatchObject({ parentSpanId: fanout.spanId, statusCode: 0 });
    expect(retried.attributes['gatehook.delivery.id']).toBe(failed.attributes['gatehook.delivery.id']);
    expect(r.requests.map((q) => q.headers.traceparent)).toEqual([
      `00-${traceId}-${failed.spanId}-01`,
      `00-${traceId}-${retried.spanId}-01`,
    ]);
  });

  it('traces a rate limit check under the gateway traceparent, with its decision', async () => {
    const { traceId, parentId, header } = newTraceparent();
    const res = await stack.api.call('POST', '/rate-limits/check', {
      key: stack.org.admin,
      headers: { traceparent: header },
      body: { tool_key: 'github.create_issue' },
    });
    expect(res.status).toBe(200);
    const [check] = await until(
      async () => collector.spans().filter((s) => s.traceId === traceId),
      (found) => found.length === 1,
    );
    expect(check).toMatchObject({ name: 'POST /rate-limits/check', parentSpanId: parentId, kind: SERVER });
    expect(check!.attributes).toMatchObject({
      'http.response.status_code': 200,
      'gatehook.org.id': stack.org.orgId,
      'gatehook.rate_limit.allowed': true,
    });
  });
});

describe('with OTEL_EXPORTER_OTLP_PROTOCOL unset (http/protobuf)', () => {
  it('exports protobuf to <endpoint>/v1/traces', async () => {
    const collector = await startOtlpCollector();
    const tracing = await startTracing(
      testConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint }),
      'gatehook-probe',
    );
    try {
      const { traceId, header } = newTraceparent();
      await inSpan('gatehook.fanout', header, {}, async () => undefined);
      await tracing.flush();
      await until(
        async () => collector.requests.length,
        (n) => n > 0,
      );
      const [request] = collector.requests;
      expect(request).toMatchObject({ path: '/v1/traces', contentType: 'application/x-protobuf' });
      // The trace id travels as its 16 raw bytes.
      expect(request!.body.includes(Buffer.from(traceId, 'hex'))).toBe(true);
    } finally {
      await tracing.stop();
      await collector.close();
    }
  });
});
