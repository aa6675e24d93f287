import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '@gatehook/core/config';
import {
  attemptSpan,
  currentTraceparent,
  inSpan,
  startTracing,
  STOP_EXPORT_TIMEOUT_MS,
  traceExport,
} from '@gatehook/core/tracing';
import { until } from '@gatehook/testkit/until';

const config = (env: Record<string, string>) => parseConfig({ NODE_ENV: 'test', ...env });

describe('traceExport (the standard OTEL_* variables)', () => {
  it('is off without an endpoint, whatever else is set', () => {
    expect(traceExport(config({}))).toBeNull();
    expect(
      traceExport(
        config({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_ENDPOINT: '' }),
      ),
    ).toBeNull();
  });

  it('appends /v1/traces to the base endpoint, takes the traces endpoint as is, and defaults to http/protobuf', () => {
    expect(traceExport(config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }))).toEqual({
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: {},
      timeoutMs: 10_000,
    });
    expect(
      traceExport(config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TIMEOUT: '3000' }))
        ?.timeoutMs,
    ).toBe(3000);
    expect(
      traceExport(
        config({
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
          OTEL_EXPORTER_OTLP_TIMEOUT: '3000',
          OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '500',
        }),
      )?.timeoutMs,
    ).toBe(500);
    expect(
      traceExport(
        config({
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/ingest',
        }),
      )?.url,
    ).toBe('https://traces.example/ingest');
    expect(
      traceExport(config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }))
        ?.protocol,
    ).toBe('http/json');
    expect(
      traceExport(
        config({
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
        }),
      )?.protocol,
    ).toBe('http/protobuf');
  });

  it('is off with OTEL_SDK_DISABLED=true', () => {
    expect(traceExport(config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }))).toBeNull();
  });

  it('parses the export headers, URL-decoded, traces headers over the common ones', () => {
    const found = traceExport(
      config({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=a%2Cb, x-team = t1',
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-team=t2',
      }),
    );
    expect(found?.headers).toEqual({ 'x-api-key': 'a,b', 'x-team': 't2' });
  });

  it('refuses grpc, a non-HTTP endpoint and malformed headers without quoting their values', () => {
    expect(() => config({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL: must be http\/protobuf or http\/json/,
    );
    expect(() => config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://c' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    let message = '';
    try {
      config({ OTEL_EXPORTER_OTLP_HEADERS: 'bad header=s3cr3t-value%' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/OTEL_EXPORTER_OTLP_HEADERS/);
    expect(message).not.toContain('s3cr3t');
  });
});

describe('the hooks with tracing off', () => {
  it('run the work as is and add nothing', async () => {
    expect(currentTraceparent()).toBeUndefined();
    expect(
      await inSpan('gatehook.fanout', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', {}, async () => 7),
    ).toBe(7);
    const headers = { 'webhook-id': 'msg' };
    const span = attemptSpan({ orgId: 'o', webhookId: 'w', deliveryId: 'd', origin: 'https://example.com' });
    expect(span.headers(headers)).toBe(headers);
    span.end({ statusCode: 200, error: null });
  });
});

describe('an export that fails', () => {
  it('is a warning in the service log, with no URL in it; the traced work goes on, and stop() does not wait for it', async () => {
    // A port nobody listens on: the export is refused.
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    server.close();
    await once(server, 'close');

    const warnings: { fields: Record<string, unknown>; message: string }[] = [];
    const logger = {
      warn: (fields: Record<string, unknown>, message: string) => void warnings.push({ fields, message }),
    };
    // One second for an export and its retries (the default is ten): the SDK reports the failure once it gives up.
    const tracing = await startTracing(
      config({
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://user:pw@127.0.0.1:${port}`,
        OTEL_BSP_SCHEDULE_DELAY: '10',
        OTEL_EXPORTER_OTLP_TIMEOUT: '1000',
      }),
      'gatehook-test',
      logger as never,
    );
    try {
      expect(tracing.target).toBe(`http/protobuf to http://127.0.0.1:${port}`);
      for (let i = 0; i < 3; i += 1) expect(await inSpan('gatehook.fanout', undefined, {}, async () => i)).toBe(i);
      // The exporter retries a refused export until its timeout, then gives up and the SDK reports it.
      await until(
        async () => warnings.length,
        (n) => n > 0,
        30_000,
      );
      expect(warnings[0]!.message).toMatch(/trace export failing/);
      expect(JSON.stringify(warnings)).not.toMatch(/pw@|:\/\//);
      await inSpan('gatehook.fanout', undefined, {}, async () => undefined);
    } finally {
      const started = Date.now();
      await tracing.stop();
      expect(Date.now() - started).toBeLessThan(STOP_EXPORT_TIMEOUT_MS + 1_000);
    }
    await tracing.stop();
  });
});
