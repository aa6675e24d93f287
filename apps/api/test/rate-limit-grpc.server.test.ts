import { connect, constants as h2 } from 'node:http2';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { startGrpcServer, GRPC_LIMITS, type RunningGrpcServer } from '@gatehook/api/grpc/server';
import { startTracing, type Tracing } from '@gatehook/core/tracing';
import {
  createTestOrg,
  createTestRule,
  startTestApi,
  testConfig,
  type TestApi,
  type TestOrg,
} from '@gatehook/testkit/api';
import { startOtlpCollector, type OtlpCollector } from '@gatehook/testkit/otlp-collector';
import { createPki } from '@gatehook/testkit/pki';
import { until } from '@gatehook/testkit/until';
import { createLogger } from '@gatehook/core/logger';
import { descriptor, encodeRequest, rlsClient, failure } from './envoy-rls-client';

// The gRPC server itself (CONTRACT 19): what a broken or slow client gets, TLS, and the span of each call.

/** A gRPC frame (uncompressed) around `message`. */
function frame(message: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

describe('the gRPC server', () => {
  let collector: OtlpCollector;
  let tracing: Tracing;
  let api: TestApi;
  let org: TestOrg;
  let ruleId: string;
  let shortArrival: RunningGrpcServer;

  beforeAll(async () => {
    collector = await startOtlpCollector();
    const config = testConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'gatehook-grpc',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    tracing = await startTracing(config, 'gatehook-grpc');
    api = await startTestApi({ config, queues: false, grpc: true });
    org = await createTestOrg(api.db);
    ruleId = (await createTestRule(api, org, { limit: 1000 })).id;
  });
  afterAll(async () => {
    await shortArrival?.close();
    await api?.close();
    await tracing?.stop();
    await collector?.close();
  });

  it('answers INVALID_ARGUMENT to bytes that are not a RateLimitRequest, RESOURCE_EXHAUSTED past 1 MB, and goes on serving', async () => {
    const rls = rlsClient(api.grpcPort);
    try {
      const garbage = await failure(rls.check(org.member, Buffer.from([0x12, 0x02, 0x0f, 0x01])));
      expect([garbage.code, garbage.details]).toEqual([
        GrpcStatus.INVALID_ARGUMENT,
        'the request is not a RateLimitRequest (it does not decode)',
      ]);
      const huge = encodeRequest({ descriptors: [descriptor('x'.repeat(GRPC_LIMITS.maxMessageBytes))] });
      expect((await failure(rls.check(org.member, huge))).code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
      expect((await rls.check(org.member, { descriptors: [descriptor('x')] })).overall_code).toBe('OK');
    } finally {
      rls.close();
    }
  });

  it('ends calls whose request never arrives (DEADLINE_EXCEEDED) while other calls on the same connection go on', async () => {
    const logger = createLogger({ name: 'test', level: 'silent' });
    shortArrival = await startGrpcServer({
      port: 0,
      host: '127.0.0.1',
      keys: api.apiKeys,
      check: api.check,
      logger,
      requestArrivalMs: 300,
    });
    const session = connect(`http://127.0.0.1:${shortArrival.port}`);
    try {
      const open = (body?: Buffer) =>
        new Promise<{ status: string | undefined; message: string | undefined }>((resolve, reject) => {
          const stream = session.request({
            [h2.HTTP2_HEADER_METHOD]: 'POST',
            [h2.HTTP2_HEADER_PATH]: '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
            'content-type': 'application/grpc',
            te: 'trailers',
            authorization: `Bearer ${org.member}`,
          });
          // The status comes in the trailers, or in the headers of a trailers-only answer.
          const settle = (headers: Record<string, unknown>) => {
            if (headers['grpc-status'] === undefined) return;
            resolve({
              status: headers['grpc-status'] as string,
              message: headers['grpc-message'] as string | undefined,
            });
            stream.close();
          };
          stream.on('trailers', settle);
          stream.on('response', settle);
          stream.on('data', () => undefined);
          stream.on('error', reject);
          // Half a frame and no end: the message never completes.
          if (body) stream.end(body);
          else stream.write(frame(encodeRequest({ descriptors: [descriptor('x')] })).subarray(0, 7));
        });
      const stalled = Array.from({ length: 20 }, () => open());
      const served = await open(frame(encodeRequest({ descriptors: [descriptor('x')] })));
      expect(served.status).toBe(String(GrpcStatus.OK));
      const ended = await Promise.all(stalled);
      expect(ended.map((e) => e.status)).toEqual(Array(20).fill(String(GrpcStatus.DEADLINE_EXCEEDED)));
      expect(decodeURIComponent(ended[0]!.message!)).toBe('the request message did not arrive within 300 ms');
    } finally {
      session.destroy();
    }
  });

  it('speaks TLS with a certificate and key', async () => {
    const pki = createPki();
    const logger = createLogger({ name: 'test', level: 'silent' });
    const tls = await startGrpcServer({
      port: 0,
      host: '127.0.0.1',
      keys: api.apiKeys,
      check: api.check,
      logger,
      tls: { certChain: Buffer.from(pki.certPem), privateKey: Buffer.from(pki.keyPem) },
    });
    const rls = rlsClient(tls.port, { rootCa: Buffer.from(pki.caPem) });
    const plaintext = rlsClient(tls.port);
    try {
      expect((await rls.check(org.member, { descriptors: [descriptor('x')] })).statuses![0]!.current_limit!.name).toBe(
        ruleId,
      );
      expect((await failure(plaintext.check(org.member, { descriptors: [descriptor('x')] }))).code).toBe(
        GrpcStatus.UNAVAILABLE,
      );
    } finally {
      rls.close();
      plaintext.close();
      await tls.close();
    }
  });

  it('runs each call in a server span, the child of the traceparent Envoy sends, with its decision and status', async () => {
    const rls = rlsClient(api.grpcPort);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentId = '00f067aa0ba902b7';
    try {
      await rls.check(org.member, { descriptors: [descriptor('x')] }, { traceparent: `00-${traceId}-${parentId}-01` });
      await failure(
        rls.check(null, { descriptors: [descriptor('x')] }, { traceparent: `00-${traceId}-${parentId}-01` }),
      );
    } finally {
      rls.close();
    }
    const spans = await until(
      async () => collector.spans().filter((s) => s.traceId === traceId),
      (found) => found.length === 2,
    );
    const [ok, unauthenticated] = [
      spans.find((s) => s.attributes['rpc.grpc.status_code'] === 0)!,
      spans.find((s) => s.attributes['rpc.grpc.status_code'] === 16)!,
    ];
    expect(ok).toMatchObject({
      name: 'envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      parentSpanId: parentId,
      kind: 2,
      attributes: {
        'rpc.system': 'grpc',
        'rpc.method': 'ShouldRateLimit',
        'gatehook.org.id': org.orgId,
        'gatehook.rate_limit.allowed': true,
        'gatehook.rate_limit.source': 'memory',
      },
    });
    // A caller's mistake is not the server's failure.
    expect(unauthenticated.statusCode).not.toBe(2);
    expect(JSON.stringify(spans)).not.toContain(org.member);
  });
});
