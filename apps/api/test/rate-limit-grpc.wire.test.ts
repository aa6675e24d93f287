import path from 'node:path';
import { loadSync } from '@grpc/proto-loader';
import type { MethodDefinition } from '@grpc/grpc-js';
import { decodeResponse, encodeRequest, envoyTypes } from './envoy-rls-client';

// The server's vendored .proto files (apps/api/src/grpc/proto) against a definition written independently from
// Envoy's published field numbers (./envoy-rls-client.ts): what one encodes the other decodes, field for field.

const method = loadSync('envoy/service/ratelimit/v3/rls.proto', {
  includeDirs: [path.join(__dirname, '../src/grpc/proto')],
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: false,
})['envoy.service.ratelimit.v3.RateLimitService'] as unknown as Record<string, MethodDefinition<object, object>>;
const shouldRateLimit = method.ShouldRateLimit!;

describe("Envoy's rate limit messages on the wire", () => {
  it('is served at the path Envoy calls', () => {
    expect(shouldRateLimit.path).toBe('/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit');
    expect([shouldRateLimit.requestStream, shouldRateLimit.responseStream]).toEqual([false, false]);
  });

  it('decodes a request encoded from Envoy’s definitions, the limit override and hits_addend wrapper included', () => {
    const bytes = encodeRequest({
      domain: 'mcp_tool_call',
      descriptors: [
        {
          entries: [
            ['tool_key', 'github.create_issue'],
            ['group', 'admins'],
          ],
          hitsAddend: 7,
          limit: { requests_per_unit: 9, unit: 'HOUR' },
        },
        { entries: [['tool_key', 'x']], hitsAddend: 0 },
        { entries: [['tool_key', 'y']] },
      ],
      hitsAddend: 3,
    });
    expect(shouldRateLimit.requestDeserialize(bytes)).toEqual({
      domain: 'mcp_tool_call',
      descriptors: [
        {
          entries: [
            { key: 'tool_key', value: 'github.create_issue' },
            { key: 'group', value: 'admins' },
          ],
          hits_addend: { value: 7 },
          limit: { requests_per_unit: 9, unit: 'HOUR' },
        },
        // A wrapper set to 0 is present (and counts as 1); an unset one is absent.
        { entries: [{ key: 'tool_key', value: 'x' }], hits_addend: { value: 0 } },
        { entries: [{ key: 'tool_key', value: 'y' }] },
      ],
      hits_addend: 3,
    });
  });

  it('encodes a response that Envoy’s definitions decode, every field the service sets included', () => {
    const sent = {
      overall_code: 'OVER_LIMIT',
      statuses: [
        {
          code: 'OK',
          current_limit: { name: 'r1', requests_per_unit: 10, unit: 'HOUR' },
          limit_remaining: 9,
          duration_until_reset: { seconds: 3599, nanos: 500_000_000 },
        },
        // Zeros set by the service are written (valid proto3; a reader takes them as the defaults they are).
        {
          code: 'OVER_LIMIT',
          current_limit: { name: 'r2', requests_per_unit: 1, unit: 'UNKNOWN' },
          limit_remaining: 0,
          duration_until_reset: { seconds: 1, nanos: 0 },
        },
        { code: 'OK' },
      ],
      response_headers_to_add: [
        { key: 'RateLimit', value: '"r1";r=9;t=3600' },
        { key: 'retry-after', value: '1' },
      ],
    };
    const bytes = shouldRateLimit.responseSerialize(sent);
    expect(decodeResponse(bytes)).toEqual(sent);
    // And byte for byte what Envoy's definitions would have written.
    const independent = envoyTypes.response.encode(envoyTypes.response.fromObject(decodeResponse(bytes))).finish();
    expect(Buffer.from(independent).equals(bytes)).toBe(true);
  });
});
