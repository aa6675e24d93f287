// Envoy's rate limit messages written byte by byte for the gRPC benchmarks (field numbers of Envoy's
// envoy/service/ratelimit/v3/rls.proto): the load generator and the bare reference server send these bytes as
// they are, so neither spends anything on a protobuf library.

function varint(value: number): number[] {
  const out: number[] = [];
  for (let v = value; ; v = Math.floor(v / 128)) {
    if (v < 0x80) {
      out.push(v);
      return out;
    }
    out.push((v % 128) | 0x80);
  }
}

/** A varint field. */
const number = (field: number, value: number) => Buffer.from([...varint(field << 3), ...varint(value)]);
/** A length-delimited field (string, bytes or message). */
const bytes = (field: number, value: Buffer | string) => {
  const body = typeof value === 'string' ? Buffer.from(value) : value;
  return Buffer.concat([Buffer.from([...varint((field << 3) | 2), ...varint(body.length)]), body]);
};

/** A RateLimitRequest of `domain` with one descriptor per list of [key, value] entries. */
export function encodeRlsRequest(domain: string, descriptors: [string, string][][]): Buffer {
  const descriptor = (entries: [string, string][]) =>
    bytes(2, Buffer.concat(entries.map(([key, value]) => bytes(1, Buffer.concat([bytes(1, key), bytes(2, value)])))));
  return Buffer.concat([bytes(1, domain), ...descriptors.map(descriptor)]);
}

/**
 * A RateLimitResponse like the API's answer to one allowed call: OK, one status with its limit (C 1000 a MINUTE,
 * named by a rule id), 999 remaining, 60 s to reset, and the RateLimit-Policy and RateLimit fields.
 */
export function constantRlsResponse(): Buffer {
  const name = 'c9b1f5d2-3a44-4c1e-9f0a-2b7d8e6a1c30';
  const limit = Buffer.concat([number(1, 1000), number(2, 2), bytes(3, name)]);
  const status = Buffer.concat([number(1, 1), bytes(2, limit), number(3, 999), bytes(4, number(1, 60))]);
  const header = (key: string, value: string) => bytes(3, Buffer.concat([bytes(1, key), bytes(2, value)]));
  return Buffer.concat([
    number(1, 1),
    bytes(2, status),
    header('RateLimit-Policy', `"${name}";q=1000;w=60`),
    header('RateLimit', `"${name}";r=999;t=60`),
  ]);
}

const same = (message: Buffer) => message;

/** ShouldRateLimit with messages as bytes both ways (no encoding or decoding on either side). */
export const RLS_BYTES_METHOD = {
  path: '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
  requestStream: false,
  responseStream: false,
  requestSerialize: same,
  requestDeserialize: same,
  responseSerialize: same,
  responseDeserialize: same,
} as const;
