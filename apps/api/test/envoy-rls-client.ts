import { credentials, makeGenericClientConstructor, Metadata, type Client, type ServiceError } from '@grpc/grpc-js';
import protobuf from 'protobufjs';

// A client of Envoy's rate limit service built for the tests from Envoy's published message definitions
// (envoy/service/ratelimit/v3/rls.proto, envoy/extensions/common/ratelimit/v3/ratelimit.proto,
// envoy/config/core/v3/base.proto, envoy/type/v3/ratelimit_unit.proto and Google's well-known types), field by
// field through protobufjs's reflection API: nothing here comes from the server's .proto files or code, so a test
// through it shows what an Envoy on the wire would see.

const root = new protobuf.Root();
// protobufjs ships Google's well-known types (Duration, UInt64Value, Struct, Timestamp) as JSON descriptors.
for (const name of ['duration', 'wrappers', 'struct', 'timestamp'] as const)
  root.addJSON(protobuf.common.get(`google/protobuf/${name}.proto`)!.nested!);

const entry = new protobuf.Type('Entry')
  .add(new protobuf.Field('key', 1, 'string'))
  .add(new protobuf.Field('value', 2, 'string'));
const override = new protobuf.Type('RateLimitOverride')
  .add(new protobuf.Field('requests_per_unit', 1, 'uint32'))
  .add(new protobuf.Field('unit', 2, 'envoy.type.v3.RateLimitUnit'));
const descriptorType = new protobuf.Type('RateLimitDescriptor')
  .add(entry)
  .add(override)
  .add(new protobuf.Field('entries', 1, 'Entry', 'repeated'))
  .add(new protobuf.Field('limit', 2, 'RateLimitOverride'))
  .add(new protobuf.Field('hits_addend', 3, 'google.protobuf.UInt64Value'));
const units = { UNKNOWN: 0, SECOND: 1, MINUTE: 2, HOUR: 3, DAY: 4, MONTH: 5, YEAR: 6 };
root.define('envoy.type.v3').add(new protobuf.Enum('RateLimitUnit', units));
root.define('envoy.extensions.common.ratelimit.v3').add(descriptorType);
root.define('envoy.config.core.v3').add(
  new protobuf.Type('HeaderValue')
    .add(new protobuf.Field('key', 1, 'string'))
    .add(new protobuf.Field('value', 2, 'string'))
    .add(new protobuf.Field('raw_value', 3, 'bytes')),
);

const code = new protobuf.Enum('Code', { UNKNOWN: 0, OK: 1, OVER_LIMIT: 2 });
const rateLimit = new protobuf.Type('RateLimit')
  .add(new protobuf.Enum('Unit', units))
  .add(new protobuf.Field('requests_per_unit', 1, 'uint32'))
  .add(new protobuf.Field('unit', 2, 'Unit'))
  .add(new protobuf.Field('name', 3, 'string'));
const quota = new protobuf.Type('Quota')
  .add(new protobuf.Field('requests', 1, 'uint32'))
  .add(new protobuf.Field('valid_until', 2, 'google.protobuf.Timestamp'))
  .add(new protobuf.Field('id', 3, 'string'));
const descriptorStatus = new protobuf.Type('DescriptorStatus')
  .add(new protobuf.Field('code', 1, 'Code'))
  .add(new protobuf.Field('current_limit', 2, 'RateLimit'))
  .add(new protobuf.Field('limit_remaining', 3, 'uint32'))
  .add(new protobuf.Field('duration_until_reset', 4, 'google.protobuf.Duration'))
  .add(new protobuf.Field('quota', 5, 'Quota'));
const response = new protobuf.Type('RateLimitResponse')
  .add(code)
  .add(rateLimit)
  .add(quota)
  .add(descriptorStatus)
  .add(new protobuf.Field('overall_code', 1, 'Code'))
  .add(new protobuf.Field('statuses', 2, 'DescriptorStatus', 'repeated'))
  .add(new protobuf.Field('response_headers_to_add', 3, 'envoy.config.core.v3.HeaderValue', 'repeated'))
  .add(new protobuf.Field('request_headers_to_add', 4, 'envoy.config.core.v3.HeaderValue', 'repeated'))
  .add(new protobuf.Field('raw_body', 5, 'bytes'))
  .add(new protobuf.Field('dynamic_metadata', 6, 'google.protobuf.Struct'))
  .add(new protobuf.Field('quota', 7, 'Quota'));
const request = new protobuf.Type('RateLimitRequest')
  .add(new protobuf.Field('domain', 1, 'string'))
  .add(new protobuf.Field('descriptors', 2, 'envoy.extensions.common.ratelimit.v3.RateLimitDescriptor', 'repeated'))
  .add(new protobuf.Field('hits_addend', 3, 'uint32'));
root.define('envoy.service.ratelimit.v3').add(request).add(response);
root.resolveAll();

/** A descriptor as a test writes it: entries as [key, value] pairs, an optional hits_addend (null: unset). */
export interface TestDescriptor {
  entries: [string, string][];
  hitsAddend?: number;
  limit?: { requests_per_unit: number; unit: keyof typeof units };
}

export interface TestRequest {
  domain?: string;
  descriptors: TestDescriptor[];
  hitsAddend?: number;
}

/** The decoded response, enums by name, 64-bit integers as numbers, unset fields absent. */
export interface TestResponse {
  overall_code: 'UNKNOWN' | 'OK' | 'OVER_LIMIT';
  statuses?: {
    code: 'UNKNOWN' | 'OK' | 'OVER_LIMIT';
    current_limit?: { name?: string; requests_per_unit?: number; unit?: string };
    limit_remaining?: number;
    duration_until_reset?: { seconds?: number; nanos?: number };
  }[];
  response_headers_to_add?: { key: string; value: string }[];
}

/** Encodes a RateLimitRequest with the definitions above. */
export function encodeRequest(message: TestRequest): Buffer {
  const plain = {
    domain: message.domain ?? 'mcp_tool_call',
    descriptors: message.descriptors.map((d) => ({
      entries: d.entries.map(([key, value]) => ({ key, value })),
      ...(d.hitsAddend !== undefined ? { hits_addend: { value: d.hitsAddend } } : {}),
      ...(d.limit ? { limit: d.limit } : {}),
    })),
    ...(message.hitsAddend !== undefined ? { hits_addend: message.hitsAddend } : {}),
  };
  return Buffer.from(request.encode(request.fromObject(plain)).finish());
}

/** Decodes a RateLimitResponse with the definitions above. */
export function decodeResponse(bytes: Buffer): TestResponse {
  return response.toObject(response.decode(bytes), { enums: String, longs: Number, defaults: false }) as TestResponse;
}

/** The message types, for the wire tests. */
export const envoyTypes = { request, response };

const Constructor = makeGenericClientConstructor(
  {
    ShouldRateLimit: {
      path: '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      requestStream: false,
      responseStream: false,
      requestSerialize: (value: Buffer) => value,
      requestDeserialize: (bytes: Buffer) => bytes,
      responseSerialize: (value: Buffer) => value,
      responseDeserialize: (bytes: Buffer) => bytes,
    },
  },
  'RateLimitService',
);

/** A gRPC client of ShouldRateLimit sending raw encoded requests. */
export interface RlsClient {
  /** Sends a request with `authorization: Bearer <key>` (no metadata when key is null). */
  check(key: string | null, message: TestRequest | Buffer, metadata?: Record<string, string>): Promise<TestResponse>;
  raw: Client;
  close(): void;
}

/** Connects to 127.0.0.1:port (plaintext, or TLS trusting `rootCa`). */
export function rlsClient(port: number, options: { rootCa?: Buffer; serverName?: string } = {}): RlsClient {
  const channel = options.rootCa ? credentials.createSsl(options.rootCa) : credentials.createInsecure();
  const client = new Constructor(
    `127.0.0.1:${port}`,
    channel,
    options.serverName ? { 'grpc.ssl_target_name_override': options.serverName } : {},
  );
  return {
    raw: client,
    check(key, message, extra = {}) {
      const metadata = new Metadata();
      if (key !== null) metadata.set('authorization', `Bearer ${key}`);
      for (const [name, value] of Object.entries(extra)) metadata.set(name, value);
      const bytes = Buffer.isBuffer(message) ? message : encodeRequest(message);
      return new Promise((resolve, reject) => {
        (
          client as unknown as {
            ShouldRateLimit(b: Buffer, m: Metadata, cb: (e: ServiceError | null, r?: Buffer) => void): void;
          }
        ).ShouldRateLimit(bytes, metadata, (error, reply) => {
          if (error) reject(error);
          else resolve(decodeResponse(reply!));
        });
      });
    },
    close: () => client.close(),
  };
}

/** A descriptor of the given tool key and attributes. */
export function descriptor(toolKey: string, attributes: [string, string][] = [], hitsAddend?: number): TestDescriptor {
  return { entries: [['tool_key', toolKey], ...attributes], ...(hitsAddend !== undefined ? { hitsAddend } : {}) };
}

/** The error a call ends with (it must fail). */
export async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise;
  } catch (error) {
    return error as ServiceError;
  }
  throw new Error('the call succeeded');
}
