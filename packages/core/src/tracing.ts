import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  context,
  diag,
  DiagLogLevel,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';
import type { Config } from './config';
import type { Logger } from './logger';
import { GATEHOOK_VERSION } from './version';

/**
 * Traces (CONTRACT 17). With an OTLP endpoint configured, {@link startTracing} starts the OpenTelemetry SDK and
 * the hooks below make spans; without one nothing is loaded but the no-op API, and every hook is one comparison
 * with null before it does what it wraps. The hooks are the only way the rest of the code touches tracing, so a
 * span never gets an attribute that is not written here: ids, counts, status codes, error codes and an origin's
 * scheme, host and port, never a URL path or query, a header value or a body.
 */

/** The settings tracing reads: the standard OpenTelemetry variables (parsed in config.ts). */
export type TracingConfig = Pick<
  Config,
  | 'OTEL_EXPORTER_OTLP_ENDPOINT'
  | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
  | 'OTEL_EXPORTER_OTLP_PROTOCOL'
  | 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
  | 'OTEL_EXPORTER_OTLP_HEADERS'
  | 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'
  | 'OTEL_EXPORTER_OTLP_TIMEOUT'
  | 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'
  | 'OTEL_SERVICE_NAME'
  | 'OTEL_SDK_DISABLED'
  | 'OTEL_BSP_SCHEDULE_DELAY'
>;

/** Where and how spans are exported, or null when tracing is off. */
export interface TraceExport {
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  headers: Record<string, string>;
  /** Longest one export may take, its retries included. */
  timeoutMs: number;
}

/** The export the settings ask for: the traces endpoint as is, or the base endpoint with `/v1/traces`. */
export function traceExport(config: TracingConfig): TraceExport | null {
  if (config.OTEL_SDK_DISABLED === 'true') return null;
  const base = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url =
    config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`);
  if (url === undefined) return null;
  return {
    url,
    protocol: config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL,
    headers: { ...config.OTEL_EXPORTER_OTLP_HEADERS, ...config.OTEL_EXPORTER_OTLP_TRACES_HEADERS },
    timeoutMs: config.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? config.OTEL_EXPORTER_OTLP_TIMEOUT,
  };
}

/** A process's tracing, as started: `stop()` exports what is left and is safe to call twice. */
export interface Tracing {
  readonly enabled: boolean;
  /** Protocol and origin of the collector (never its path or credentials), for the start-up log line. */
  readonly target: string | null;
  /** Exports every ended span now. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

const OFF: Tracing = { enabled: false, target: null, flush: async () => undefined, stop: async () => undefined };

/**
 * Longest stop() waits for the last spans to be exported: a collector that is down (the exporter retries for
 * seconds) must not hold a process's shutdown.
 */
export const STOP_EXPORT_TIMEOUT_MS = 2_000;

/** Least time between two log lines about failing exports: a collector that is down is said once a minute. */
export const EXPORT_WARNING_INTERVAL_MS = 60_000;

/**
 * The SDK's own errors (an export the collector refused or never got) as warnings of the service's log, at most one
 * per EXPORT_WARNING_INTERVAL_MS, any URL in them masked.
 */
function warnOnErrors(logger: Pick<Logger, 'warn'>): void {
  let last = -Infinity;
  const warn = (message: string, ...args: unknown[]) => {
    const now = Date.now();
    if (now - last < EXPORT_WARNING_INTERVAL_MS) return;
    last = now;
    const detail = [message, ...args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : ''))]
      .filter(Boolean)
      .join(' ');
    logger.warn(
      { err: detail.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '[url]').slice(0, 500) },
      'trace export failing; spans are being dropped',
    );
  };
  const quiet = () => undefined;
  diag.setLogger({ error: warn, warn, info: quiet, debug: quiet, verbose: quiet }, DiagLogLevel.WARN);
}

interface Active {
  tracer: Tracer;
  propagator: TextMapPropagator;
}

// Null while tracing is off: the hooks compare with it and return.
let active: Active | null = null;

/**
 * Starts the OpenTelemetry SDK when {@link traceExport} finds an endpoint (OTLP/HTTP, protobuf or JSON, spans sent
 * in batches every OTEL_BSP_SCHEDULE_DELAY ms) and returns a handle to stop it; otherwise loads nothing and returns
 * a handle that does nothing. One per process: the API and the worker each call it once at start.
 */
export async function startTracing(
  config: TracingConfig,
  serviceName: string,
  logger?: Pick<Logger, 'warn'>,
): Promise<Tracing> {
  const target = traceExport(config);
  if (target === null) return OFF;
  if (active !== null) throw new Error('tracing is already started in this process');
  // The SDK is loaded only here, so a process without an endpoint never loads it.
  const [
    { TracerProvider, BatchSpanProcessor },
    { resourceFromAttributes },
    { AsyncLocalStorageContextManager },
    { W3CTraceContextPropagator },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
  ]);
  const { OTLPTraceExporter } =
    target.protocol === 'http/json'
      ? await import('@opentelemetry/exporter-trace-otlp-http')
      : await import('@opentelemetry/exporter-trace-otlp-proto');
  const exporter = new OTLPTraceExporter({ url: target.url, headers: target.headers, timeoutMillis: target.timeoutMs });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      'service.name': config.OTEL_SERVICE_NAME ?? serviceName,
      'service.version': GATEHOOK_VERSION,
    }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: config.OTEL_BSP_SCHEDULE_DELAY })],
  });
  // Parents follow the work across awaits and into request body events.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  if (logger) warnOnErrors(logger);
  active = { tracer: provider.getTracer('gatehook', GATEHOOK_VERSION), propagator: new W3CTraceContextPropagator() };
  let stopped: Promise<void> | null = null;
  return {
    enabled: true,
    target: `${target.protocol} to ${new URL(target.url).origin}`,
    flush: () => provider.forceFlush(),
    stop() {
      stopped ??= (async () => {
        active = null;
        let timer: NodeJS.Timeout | undefined;
        const gaveUp = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, STOP_EXPORT_TIMEOUT_MS);
        });
        await Promise.race([provider.shutdown().catch(() => undefined), gaveUp]);
        clearTimeout(timer);
        context.disable();
        diag.disable();
      })();
      return stopped;
    },
  };
}

const parentOf = (on: Active, traceparent: string | undefined): Context =>
  traceparent === undefined ? ROOT_CONTEXT : on.propagator.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter);

function endWith(span: Span, failed: boolean, errorType?: string): void {
  if (failed) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    if (errorType) span.setAttribute('error.type', errorType);
  }
  span.end();
}

/**
 * Runs a request to one of the gateway's hot routes (POST /audit-events, POST /rate-limits/check) in a server span
 * named `POST <route>`, the child of the request's W3C `traceparent` when it has one. The span ends when the
 * response does, with its status code.
 */
export function traceRequest(req: IncomingMessage, res: ServerResponse, route: string, handle: () => void): void {
  const on = active;
  if (on === null) return handle();
  const parent = on.propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
  const method = req.method ?? 'POST';
  const span = on.tracer.startSpan(
    `${method} ${route}`,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'http.route': route } },
    parent,
  );
  res.once('close', () => {
    span.setAttribute('http.response.status_code', res.statusCode);
    endWith(span, res.statusCode >= 500 || !res.writableFinished, res.writableFinished ? undefined : 'aborted');
  });
  const ctx = trace.setSpan(parent, span);
  // The body arrives in events of the request: bound, they run in the span's context like the handler.
  context.bind(ctx, req);
  context.with(ctx, handle);
}

/**
 * Runs a gRPC call (Envoy's ShouldRateLimit) in a server span named `<service>/<method>`, the child of the call's
 * W3C `traceparent` metadata when it has one; `handle` gets the function that ends the span with the call's status
 * code (an error status for INTERNAL, UNKNOWN and UNAVAILABLE, the codes of a failure of the server's own).
 */
export function traceRpc(
  carrier: { traceparent?: string | undefined; tracestate?: string | undefined },
  service: string,
  method: string,
  handle: (end: (code: number) => void) => void,
): void {
  const on = active;
  if (on === null) return handle(noEnd);
  const parent = on.propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
  const span = on.tracer.startSpan(
    `${service}/${method}`,
    { kind: SpanKind.SERVER, attributes: { 'rpc.system': 'grpc', 'rpc.service': service, 'rpc.method': method } },
    parent,
  );
  let ended = false;
  const end = (code: number) => {
    if (ended) return;
    ended = true;
    span.setAttribute('rpc.grpc.status_code', code);
    endWith(span, SERVER_FAILURE_CODES.has(code), SERVER_FAILURE_CODES.has(code) ? `grpc_status_${code}` : undefined);
  };
  context.with(trace.setSpan(parent, span), () => handle(end));
}

// gRPC status codes UNKNOWN, INTERNAL, UNAVAILABLE: what the server failed at, not what the caller got wrong.
const SERVER_FAILURE_CODES = new Set([2, 13, 14]);
const noEnd = (): void => undefined;

/** Adds attributes to the span in whose context this runs (a request's: its event count, its decision). */
export function annotateSpan(attributes: Attributes): void {
  if (active !== null) trace.getActiveSpan()?.setAttributes(attributes);
}

/**
 * The W3C `traceparent` of the span in whose context this runs, to store in a job so the job's spans continue the
 * trace; undefined when tracing is off or no span is current.
 */
export function currentTraceparent(): string | undefined {
  if (active === null || trace.getActiveSpan() === undefined) return undefined;
  const carrier: Record<string, string> = {};
  active.propagator.inject(context.active(), carrier, defaultTextMapSetter);
  return carrier.traceparent;
}

/**
 * Runs a job's work (a fan-out, a batch flush) in a span named `name`, the child of the `traceparent` the job
 * carries (a new trace without one). `result` adds attributes of the outcome; a failure sets the span's status and
 * its error's name, never its message.
 */
export function inSpan<T>(
  name: string,
  traceparent: string | undefined,
  attributes: Attributes,
  work: () => Promise<T>,
  result?: (value: T) => Attributes,
): Promise<T> {
  const on = active;
  if (on === null) return work();
  const parent = parentOf(on, traceparent);
  const span = on.tracer.startSpan(name, { kind: SpanKind.CONSUMER, attributes }, parent);
  return context.with(trace.setSpan(parent, span), work).then(
    (value) => {
      if (result) span.setAttributes(result(value));
      span.end();
      return value;
    },
    (error: unknown) => {
      endWith(span, true, error instanceof Error ? error.name : 'error');
      throw error;
    },
  );
}

/** Runs work in the context of a job's `traceparent` (a deliver job's): the spans it makes are that span's children. */
export function withTraceparent<T>(traceparent: string | undefined, work: () => T): T {
  const on = active;
  if (on === null || traceparent === undefined) return work();
  return context.with(parentOf(on, traceparent), work);
}

/** One delivery attempt's span, as the attempt sees it. */
export interface AttemptSpan {
  /** The request's headers plus the span's `traceparent` (the same object when tracing is off). */
  headers(headers: Record<string, string>): Record<string, string>;
  /** Ends the span with the attempt's outcome: the receiver's status code (0: none) and the error code. */
  end(outcome: { statusCode: number; error: string | null }): void;
}

const NO_ATTEMPT: AttemptSpan = { headers: (headers) => headers, end: () => undefined };

/** The scheme, host and port of an origin: all of a URL a span may carry. */
function originAttributes(origin: string): Attributes {
  try {
    const url = new URL(origin);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    return { 'url.scheme': url.protocol.replace(/:$/, ''), 'server.address': url.hostname, 'server.port': port };
  } catch {
    return {};
  }
}

/**
 * Starts the span of one delivery attempt (a client span, the child of the fan-out, batch flush or earlier work in
 * whose context the attempt runs): webhook, delivery and organisation ids and the receiver's origin.
 */
export function attemptSpan(attempt: {
  orgId: string;
  webhookId: string;
  deliveryId: string;
  origin: string;
}): AttemptSpan {
  const on = active;
  if (on === null) return NO_ATTEMPT;
  const parent = context.active();
  const span = on.tracer.startSpan(
    'gatehook.delivery.attempt',
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'gatehook.org.id': attempt.orgId,
        'gatehook.webhook.id': attempt.webhookId,
        'gatehook.delivery.id': attempt.deliveryId,
        'http.request.method': 'POST',
        ...originAttributes(attempt.origin),
      },
    },
    parent,
  );
  const ctx = trace.setSpan(parent, span);
  return {
    headers(headers) {
      const sent = { ...headers };
      on.propagator.inject(ctx, sent, defaultTextMapSetter);
      return sent;
    },
    end({ statusCode, error }) {
      if (statusCode > 0) span.setAttribute('http.response.status_code', statusCode);
      if (error) span.setAttribute('gatehook.attempt.error', error);
      endWith(
        span,
        error !== null || statusCode === 0 || statusCode >= 400,
        error ?? (statusCode > 0 ? String(statusCode) : undefined),
      );
    },
  };
}
