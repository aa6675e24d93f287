import path from 'node:path';
import {
  Server,
  ServerCredentials,
  ServerInterceptingCall,
  status as GrpcStatus,
  type ServerInterceptor,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import {
  RLS_METHOD,
  RLS_SERVICE,
  shouldRateLimitHandler,
  UNDECODABLE,
  type RateLimitServiceDeps,
} from './rate-limit-service';

/** What one client may cost the gRPC server: sizes, streams, and how long a call or a quiet connection may last. */
export const GRPC_LIMITS = {
  /** Largest request or response message (CONTRACT 3's body limit); a larger request ends RESOURCE_EXHAUSTED. */
  maxMessageBytes: 1024 * 1024,
  /** Calls one connection may have open at once (Envoy multiplexes its checks over few connections). */
  maxConcurrentStreams: 1000,
  /** A call whose request message has not arrived this long after its headers ends DEADLINE_EXCEEDED. */
  requestArrivalMs: 10_000,
  /** The server pings a connection after this long without activity, and drops it when the ping goes unanswered. */
  keepaliveTimeMs: 30_000,
  keepaliveTimeoutMs: 10_000,
  /** A connection without calls for this long is closed (GOAWAY; a gateway reconnects when it next needs one). */
  maxConnectionIdleMs: 5 * 60_000,
  /** On shutdown, calls in flight get this long to finish before their connections are cut. */
  shutdownGraceMs: 10_000,
} as const;

const PROTO_DIR = path.join(__dirname, 'proto');

/**
 * Envoy's RateLimitService, loaded from the vendored definitions (./proto). A request that does not decode becomes
 * {@link UNDECODABLE} for the handler to answer INVALID_ARGUMENT (grpc-js would answer INTERNAL).
 */
export function rateLimitServiceDefinition(): ServiceDefinition {
  const loaded = loadSync('envoy/service/ratelimit/v3/rls.proto', {
    includeDirs: [PROTO_DIR],
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: false,
  });
  const service = loaded[RLS_SERVICE] as ServiceDefinition;
  const method = service[RLS_METHOD]!;
  const decode = method.requestDeserialize;
  return {
    [RLS_METHOD]: {
      ...method,
      requestDeserialize: (bytes: Buffer): unknown => {
        try {
          return decode(bytes);
        } catch {
          return UNDECODABLE;
        }
      },
    },
  };
}

/**
 * Ends a call whose request message has not arrived within {@link GRPC_LIMITS.requestArrivalMs} of its headers: a
 * client that opens calls and sends nothing, or trickles a message, cannot keep them open. The caller's own
 * deadline (grpc-timeout), when shorter, ends it sooner.
 */
const requestArrival =
  (withinMs: number): ServerInterceptor =>
  (_method, call) => {
    let timer: NodeJS.Timeout | undefined;
    const stop = () => clearTimeout(timer);
    return new ServerInterceptingCall(call, {
      start(next) {
        timer = setTimeout(
          () =>
            call.sendStatus({
              code: GrpcStatus.DEADLINE_EXCEEDED,
              details: `the request message did not arrive within ${withinMs} ms`,
            }),
          withinMs,
        );
        next({
          onReceiveMessage(message, pass) {
            stop();
            pass(message);
          },
          onCancel: stop,
        });
      },
      sendStatus(status, pass) {
        stop();
        pass(status);
      },
    });
  };

export interface GrpcServerOptions extends RateLimitServiceDeps {
  port: number;
  /** Default: every interface. */
  host?: string;
  /** PEM certificate chain and key: TLS; without them plaintext HTTP/2 (h2c), as Envoy's clusters default to. */
  tls?: { certChain: Buffer; privateKey: Buffer } | undefined;
  /** Default {@link GRPC_LIMITS.requestArrivalMs} (tests shorten it). */
  requestArrivalMs?: number;
}

/** The running gRPC server. */
export interface RunningGrpcServer {
  port: number;
  /** Stops taking calls, lets calls in flight finish (at most the shutdown grace), then closes; safe to call twice. */
  close(): Promise<void>;
}

/** Starts the API's gRPC server: Envoy's rate limit service over the API's rate limit check (CONTRACT 19). */
export async function startGrpcServer(options: GrpcServerOptions): Promise<RunningGrpcServer> {
  const server = new Server({
    'grpc.max_receive_message_length': GRPC_LIMITS.maxMessageBytes,
    'grpc.max_send_message_length': GRPC_LIMITS.maxMessageBytes,
    'grpc.max_concurrent_streams': GRPC_LIMITS.maxConcurrentStreams,
    'grpc.keepalive_time_ms': GRPC_LIMITS.keepaliveTimeMs,
    'grpc.keepalive_timeout_ms': GRPC_LIMITS.keepaliveTimeoutMs,
    'grpc.max_connection_idle_ms': GRPC_LIMITS.maxConnectionIdleMs,
    interceptors: [requestArrival(options.requestArrivalMs ?? GRPC_LIMITS.requestArrivalMs)],
  });
  server.addService(rateLimitServiceDefinition(), { [RLS_METHOD]: shouldRateLimitHandler(options) });
  const credentials = options.tls
    ? ServerCredentials.createSsl(
        null,
        [{ cert_chain: options.tls.certChain, private_key: options.tls.privateKey }],
        false,
      )
    : ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${options.host ?? '0.0.0.0'}:${options.port}`, credentials, (error, bound) =>
      error ? reject(error) : resolve(bound),
    );
  });
  let closing: Promise<void> | undefined;
  return {
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, GRPC_LIMITS.shutdownGraceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      return closing;
    },
  };
}
