import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One export request as the collector received it. */
export interface OtlpRequest {
  path: string;
  contentType: string;
  body: Buffer;
}

/** A span of an http/json export, flattened: ids in hex, attributes as plain values. */
export interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  /** 2: error (OTLP status code). */
  statusCode: number;
  attributes: Record<string, string | number | boolean>;
}

export interface OtlpCollector {
  /** The base endpoint, for OTEL_EXPORTER_OTLP_ENDPOINT (exporters post to `<endpoint>/v1/traces`). */
  endpoint: string;
  requests: OtlpRequest[];
  /** Every span of the http/json requests received so far. */
  spans(): CollectedSpan[];
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; boolValue?: boolean; intValue?: number | string; doubleValue?: number };
type JsonSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status?: { code?: number };
  attributes?: { key: string; value: AnyValue }[];
};
type JsonExport = {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: AnyValue }[] };
    scopeSpans?: { spans?: JsonSpan[] }[];
  }[];
};

const plain = (value: AnyValue): string | number | boolean =>
  value.stringValue ??
  value.boolValue ??
  (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? ''));

const attributesOf = (list: { key: string; value: AnyValue }[] = []) =>
  Object.fromEntries(list.map((a) => [a.key, plain(a.value)]));

/**
 * An OTLP/HTTP collector for tests, on 127.0.0.1: it answers every export with 200 and keeps the requests; the
 * spans of http/json exports are decoded (protobuf ones are kept as bytes).
 */
export async function startOtlpCollector(): Promise<OtlpCollector> {
  const requests: OtlpRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const contentType = req.headers['content-type'] ?? '';
      requests.push({ path: req.url ?? '', contentType, body: Buffer.concat(chunks) });
      res.writeHead(200, {
        'content-type': contentType.startsWith('application/json') ? 'application/json' : 'application/x-protobuf',
      });
      res.end(contentType.startsWith('application/json') ? '{}' : '');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    spans() {
      return requests
        .filter((r) => r.contentType.startsWith('application/json'))
        .flatMap((r) => (JSON.parse(r.body.toString('utf8')) as JsonExport).resourceSpans ?? [])
        .flatMap((rs) => {
          const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
          return (rs.scopeSpans ?? []).flatMap((ss) =>
            (ss.spans ?? []).map((s) => ({
              service,
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind,
              statusCode: s.status?.code ?? 0,
              attributes: attributesOf(s.attributes),
            })),
          );
        });
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}
