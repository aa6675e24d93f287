// A lean gRPC load generator run as its own process (like bench/http-load.ts): one @grpc/grpc-js channel (one
// HTTP/2 connection, as an Envoy worker keeps to its rate limit service) calling ShouldRateLimit with requests
// encoded beforehand, sent and received as bytes, so the client costs the same whatever server answers; in the
// shapes of ./load-loop.ts.
// Input: one JSON document on stdin; output: one JSON line {requests, errors, seconds, perSecond, latenciesMs}.
import { readFileSync } from 'node:fs';
import { credentials, makeGenericClientConstructor, Metadata, type ServiceError } from '@grpc/grpc-js';
import { runLoad, type LoadShape } from './load-loop';
import { RLS_BYTES_METHOD } from './rls-wire';

interface GrpcLoadSpec extends LoadShape {
  /** host:port */
  target: string;
  /** `authorization` metadata, if any. */
  authorization?: string;
  /** Encoded RateLimitRequests (base64), sent in turn. */
  requests: string[];
}

const spec = JSON.parse(readFileSync(0, 'utf8')) as GrpcLoadSpec;
const requests = spec.requests.map((r) => Buffer.from(r, 'base64'));
const Client = makeGenericClientConstructor({ ShouldRateLimit: RLS_BYTES_METHOD }, 'RateLimitService');
const client = new Client(spec.target, credentials.createInsecure()) as unknown as {
  ShouldRateLimit(request: Buffer, metadata: Metadata, callback: (error: ServiceError | null) => void): void;
  close(): void;
};
const metadata = new Metadata();
if (spec.authorization) metadata.set('authorization', spec.authorization);
let next = 0;

function send(): Promise<boolean> {
  return new Promise((resolve) =>
    client.ShouldRateLimit(requests[next++ % requests.length]!, metadata, (error) => resolve(error === null)),
  );
}

async function main(): Promise<void> {
  process.stdout.write(`${JSON.stringify(await runLoad(spec, send))}\n`);
  client.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
